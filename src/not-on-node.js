// What `import … from "booblik"` loads outside Bun (package.json exports, condition "node"): the
// package's main entry holds the broker and the embedded Broker, which run on Bun only (bun:ffi,
// Bun.listen). The client library is "booblik/client" (README, "What runs where").
throw new Error(
  `"booblik" (the broker and the embedded Broker) runs on Bun only; on Node.js ${process.versions.node} import the client from "booblik/client"`,
);

/** Reads a byte range of an open descriptor (what a sendfile of that range would send). */
import fs from "node:fs";

export function readFileRange(fd: number, position: number, lengthBytes: number): Uint8Array {
  const bytes = new Uint8Array(lengthBytes);
  let done = 0;
  while (done < lengthBytes) {
    const got = fs.readSync(fd, bytes, done, lengthBytes - done, position + done);
    if (got === 0) break;
    done += got;
  }
  return bytes.subarray(0, done);
}

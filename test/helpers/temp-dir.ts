/** Temporary directories that remove themselves: `using dir = tempDir("name")`. */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export interface TempDir extends Disposable {
  readonly path: string;
  file(name: string): string;
}

export function tempDir(prefix = "booblik-test"): TempDir {
  const dirPath = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
  return {
    path: dirPath,
    file: (name: string) => path.join(dirPath, name),
    [Symbol.dispose]() {
      fs.rmSync(dirPath, { recursive: true, force: true });
    },
  };
}

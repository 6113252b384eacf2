/**
 * A consumer position kept in a file, replaced atomically (temporary file, fsync, rename, fsync of
 * the directory), so a crash leaves the previous or the new position, never a torn one.
 *
 * The file holds JSON: {"topic":"t","partition":0,"offset":42}. `load` refuses a file that belongs to
 * another topic or partition instead of resuming from someone else's position.
 */
import fs from "node:fs";
import path from "node:path";
import { InvalidArgumentError } from "../domain/errors.ts";

export class PositionFile {
  readonly path: string;
  readonly topic: string;
  readonly partition: number;

  constructor(filePath: string, topic: string, partition = 0) {
    this.path = filePath;
    this.topic = topic;
    this.partition = partition;
  }

  /** The saved offset, or undefined when nothing was saved yet. */
  async load(): Promise<number | undefined> {
    let text: string;
    try {
      text = await fs.promises.readFile(this.path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    let saved: { topic?: unknown; partition?: unknown; offset?: unknown };
    try {
      saved = JSON.parse(text) as typeof saved;
    } catch {
      throw new InvalidArgumentError(`position file ${this.path} is not JSON`);
    }
    if (saved.topic !== this.topic || saved.partition !== this.partition) {
      throw new InvalidArgumentError(
        `position file ${this.path} is for ${String(saved.topic)}/${String(saved.partition)}, not ${this.topic}/${this.partition}`,
      );
    }
    if (typeof saved.offset !== "number" || !Number.isSafeInteger(saved.offset) || saved.offset < 0) {
      throw new InvalidArgumentError(`position file ${this.path} holds no valid offset`);
    }
    return saved.offset;
  }

  /** Saves `offset` (the next offset to read) durably and atomically. */
  async save(offset: number): Promise<void> {
    const temporary = `${this.path}.tmp`;
    const handle = await fs.promises.open(temporary, "w", 0o644);
    try {
      await handle.writeFile(`${JSON.stringify({ topic: this.topic, partition: this.partition, offset })}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.promises.rename(temporary, this.path);
    const directory = await fs.promises.open(path.dirname(path.resolve(this.path)), "r");
    try {
      await directory.sync();
    } finally {
      await directory.close();
    }
  }
}

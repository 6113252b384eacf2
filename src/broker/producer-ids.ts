/**
 * Producer ids for idempotent producers (Kafka's InitProducerId, booblik's INIT_PRODUCER_ID): unique
 * for the life of a data directory, across restarts and crashes.
 *
 * File `<dataDir>/producer-ids.json`, replaced atomically (temporary file, fsync, rename, fsync of
 * the directory): `{"version":1,"nextBlockStart":N}`. Invariant: no id ≥ N was ever handed out.
 * Ids are handed out from a reserved block [start, N): reserving the next block writes the file
 * first, so one fsync pays for PRODUCER_ID_BLOCK_SIZE ids; a restart begins at N, skipping what was
 * left of the block (ids are cheap, reuse is not: a reused id would make a new producer's batches
 * look like an old one's resends).
 *
 * A missing file means no id was ever handed out (a new data directory, or one from before this
 * file existed). An unreadable one is refused at open: guessing could reuse ids.
 */
import path from "node:path";
import { pathExists, readTextFile, unlinkFile, writeFileAtomically } from "../../ffi/file.ts";
import { BooblikError } from "../domain/errors.ts";
import { PRODUCER_ID_BLOCK_SIZE } from "../domain/limits.ts";

export const PRODUCER_IDS_FILE = "producer-ids.json";
const FILE_VERSION = 1;

export class ProducerIdAllocator {
  private readonly file: string;
  private next: number;
  private reservedEnd: number;
  private reserving: Promise<void> | undefined;

  private constructor(file: string, nextBlockStart: number) {
    this.file = file;
    this.next = nextBlockStart;
    this.reservedEnd = nextBlockStart;
  }

  static open(dataDir: string): ProducerIdAllocator {
    const file = path.join(dataDir, PRODUCER_IDS_FILE);
    // A reservation a crash interrupted before its rename: the file still names the older block.
    const leftover = `${file}.async.tmp`;
    if (pathExists(leftover)) unlinkFile(leftover);
    const text = readTextFile(file);
    if (text === undefined) return new ProducerIdAllocator(file, 0);
    let nextBlockStart: unknown;
    try {
      const parsed = JSON.parse(text) as { version?: unknown; nextBlockStart?: unknown };
      if (parsed.version === FILE_VERSION) nextBlockStart = parsed.nextBlockStart;
    } catch {
      // Refused below.
    }
    if (typeof nextBlockStart !== "number" || !Number.isSafeInteger(nextBlockStart) || nextBlockStart < 0)
      throw new BooblikError(
        "BAD_SEGMENT_FILE",
        `${file} is not a producer id file of version ${FILE_VERSION} ({"version":1,"nextBlockStart":<integer ≥ 0>}): refusing to guess, since a reused producer id could drop a new producer's records as resends; restore it, or write a nextBlockStart above every id handed out`,
      );
    return new ProducerIdAllocator(file, nextBlockStart);
  }

  /** The next id; reserves a new block durably first when the current one is used up. */
  async allocate(): Promise<number> {
    while (this.next >= this.reservedEnd) {
      this.reserving ??= this.reserve().finally(() => {
        this.reserving = undefined;
      });
      await this.reserving;
    }
    return this.next++;
  }

  private async reserve(): Promise<void> {
    const end = this.reservedEnd + PRODUCER_ID_BLOCK_SIZE;
    await writeFileAtomically(
      this.file,
      `${JSON.stringify({ version: FILE_VERSION, nextBlockStart: end })}\n`,
    );
    this.reservedEnd = end;
  }
}

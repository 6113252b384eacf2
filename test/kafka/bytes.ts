/**
 * An independent big-endian builder of Kafka frames for tests: expected responses and hand-built
 * requests are written with it, field by field, sharing no code with src/kafka/codec.ts.
 */
export class Expect {
  readonly out: number[] = [];
  i8(v: number): this {
    this.out.push(v & 0xff);
    return this;
  }
  i16(v: number): this {
    const b = Buffer.alloc(2);
    b.writeInt16BE(v);
    this.out.push(...b);
    return this;
  }
  i32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    this.out.push(...b);
    return this;
  }
  i64(v: number): this {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(BigInt(v));
    this.out.push(...b);
    return this;
  }
  uvarint(v: number): this {
    let rest = v;
    while (rest >= 0x80) {
      this.out.push((rest & 0x7f) | 0x80);
      rest = Math.floor(rest / 128);
    }
    this.out.push(rest);
    return this;
  }
  str(s: string | null): this {
    if (s === null) return this.i16(-1);
    const b = Buffer.from(s);
    this.i16(b.length);
    this.out.push(...b);
    return this;
  }
  cstr(s: string | null): this {
    if (s === null) return this.uvarint(0);
    const b = Buffer.from(s);
    this.uvarint(b.length + 1);
    this.out.push(...b);
    return this;
  }
  raw(bytes: Iterable<number>): this {
    this.out.push(...bytes);
    return this;
  }
  /** The frame: int32 size, then everything added. */
  frame(): Uint8Array {
    const body = Uint8Array.from(this.out);
    const size = Buffer.alloc(4);
    size.writeInt32BE(body.length);
    return Uint8Array.from([...size, ...body]);
  }
  /** Everything added, without a size: a request frame as the handler gets it. */
  body(): Uint8Array {
    return Uint8Array.from(this.out);
  }
}

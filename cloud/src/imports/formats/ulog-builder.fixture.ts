// A ULog file written message by message, for tests that need what the fixtures do not carry.

/** Writes a ULog file message by message (little-endian, as the spec says). */
export class ULogBuilder {
  #parts: number[] = [];
  constructor(version = 1, timestamp = 1000) {
    this.#parts.push(0x55, 0x4c, 0x6f, 0x67, 0x01, 0x12, 0x35, version, ...u64(timestamp));
  }
  get length(): number {
    return this.#parts.length;
  }
  message(type: string, payload: number[]): this {
    this.#parts.push(payload.length & 0xff, payload.length >> 8, type.charCodeAt(0), ...payload);
    return this;
  }
  raw(bytes: number[]): this {
    this.#parts.push(...bytes);
    return this;
  }
  flagBits(incompat0: number, appended: number[] = []): this {
    const offsets = [...appended, 0, 0, 0].slice(0, 3);
    return this.message('B', [...new Array(8).fill(0), incompat0, 0, 0, 0, 0, 0, 0, 0, ...offsets.flatMap(u64)]);
  }
  format(text: string): this {
    return this.message('F', ascii(text));
  }
  param(key: string, value: number[]): this {
    return this.message('P', [key.length, ...ascii(key), ...value]);
  }
  info(key: string, value: number[]): this {
    return this.message('I', [key.length, ...ascii(key), ...value]);
  }
  subscribe(multiId: number, msgId: number, name: string): this {
    return this.message('A', [multiId, msgId & 0xff, msgId >> 8, ...ascii(name)]);
  }
  data(msgId: number, payload: number[]): this {
    return this.message('D', [msgId & 0xff, msgId >> 8, ...payload]);
  }
  log(level: number, timestamp: number, text: string, tag?: number): this {
    if (tag === undefined) return this.message('L', [0x30 + level, ...u64(timestamp), ...ascii(text)]);
    return this.message('C', [0x30 + level, tag & 0xff, tag >> 8, ...u64(timestamp), ...ascii(text)]);
  }
  build(): Uint8Array {
    return Uint8Array.from(this.#parts);
  }
}

export const ascii = (text: string) => Array.from(text, (c) => c.charCodeAt(0));
export const u64 = (n: number) => Array.from({ length: 8 }, (_, i) => Math.floor(n / 2 ** (8 * i)) & 0xff);
export const u32 = (n: number) => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24];
export const f32 = (x: number) => Array.from(new Uint8Array(Float32Array.of(x).buffer));


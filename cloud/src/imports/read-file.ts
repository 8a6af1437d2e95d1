import { open } from 'node:fs/promises';

/** Bytes read per step: large enough that a read costs little, small enough that memory stays flat. */
export const READ_CHUNK_BYTES = 1 << 20;

/**
 * Feed a file to `push` in order, a chunk at a time, through one reused buffer (a reader copies what
 * it keeps), or a fresh one per chunk with `freshBuffers`. `step` runs after each chunk: the importer writes a full batch there, and awaiting it
 * keeps reading from outrunning the database.
 */
export async function readFileInChunks(
  path: string,
  push: (chunk: Uint8Array, offset: number) => void,
  step?: () => Promise<void> | void,
  options: { freshBuffers?: boolean } = {},
): Promise<void> {
  const file = await open(path, 'r');
  try {
    let buffer = new Uint8Array(READ_CHUNK_BYTES);
    let offset = 0;
    for (;;) {
      // A MAVLink framer hands out views into the chunk, which a batch may keep (an unknown id's raw payload).
      if (options.freshBuffers && offset > 0) buffer = new Uint8Array(READ_CHUNK_BYTES);
      const { bytesRead } = await file.read(buffer, 0, buffer.length, offset);
      if (bytesRead === 0) break;
      push(buffer.subarray(0, bytesRead), offset);
      offset += bytesRead;
      await step?.();
    }
  } finally {
    await file.close();
  }
}

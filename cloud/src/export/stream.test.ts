import { describe, expect, it } from 'vitest';
import { pulled } from './stream.ts';

/** The export's stream reads a page only when its reader asks: the mechanism behind "never whole in memory". */
describe('pulled', () => {
  function counting(pages: number) {
    const state = { produced: 0, finished: false };
    async function* gen() {
      try {
        for (let i = 0; i < pages; i++) {
          state.produced++;
          yield new Uint8Array([i]);
        }
      } finally {
        state.finished = true;
      }
    }
    return { state, chunks: gen() };
  }

  it('asks for the next chunk only when the reader reads', async () => {
    const { state, chunks } = counting(1000);
    const reader = pulled(chunks, () => true).getReader();
    await new Promise((r) => setTimeout(r, 20));
    expect(state.produced).toBe(0);
    expect((await reader.read()).value).toEqual(new Uint8Array([0]));
    await new Promise((r) => setTimeout(r, 20));
    expect(state.produced).toBe(1);
    await reader.read();
    expect(state.produced).toBe(2);
  });

  it('a reader that goes away ends the generator (its pages stop being read)', async () => {
    const { state, chunks } = counting(1000);
    const reader = pulled(chunks, () => true).getReader();
    await reader.read();
    await reader.cancel();
    expect(state.finished).toBe(true);
    expect(state.produced).toBe(1);
  });

  it('a failure goes to `fail`; the stream closes when it cut the connection, errors when it could not', async () => {
    async function* failing() {
      yield new Uint8Array([1]);
      throw new Error('relation "wide_x" does not exist');
    }
    const seen: unknown[] = [];
    const cut = pulled(failing(), (e) => (seen.push(e), true)).getReader();
    await cut.read();
    expect(await cut.read()).toEqual({ done: true, value: undefined });
    expect(seen).toHaveLength(1);
    const uncut = pulled(failing(), () => false).getReader();
    await uncut.read();
    // The error the client sees says nothing of the cause (no SQL, no table name).
    await expect(uncut.read()).rejects.toThrow(/^export failed after the response started$/);
  });
});

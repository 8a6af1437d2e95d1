import { describe, expect, it } from 'vitest';
import { PreparedShapes } from './prepared-shapes.ts';

describe('PreparedShapes', () => {
  const make = () => {
    let now = 0;
    const shapes = new PreparedShapes({ prefix: 'sortie_narrow_', max: 2, lifetimeMs: 1000, now: () => now });
    return { shapes, advance: (ms: number) => (now += ms) };
  };

  it('names a shape the second time it is seen, by its text, the same name every time', () => {
    const { shapes } = make();
    expect(shapes.use('a', 'select 1')).toBeUndefined();
    const name = shapes.use('a', 'select 1');
    expect(name).toMatch(/^sortie_narrow_[0-9a-f]{32}$/);
    expect(shapes.use('a', 'select 1')).toBe(name);
    expect(shapes.use('b', 'select 2')).toBeUndefined();
    expect(shapes.use('b', 'select 2')).not.toBe(name);
  });

  it('names at most `max` shapes while they are in use', () => {
    const { shapes, advance } = make();
    for (const s of ['a', 'b', 'c', 'a', 'b', 'c']) shapes.use(s, s);
    expect(shapes.size).toBe(2);
    advance(900);
    shapes.use('a', 'a');
    shapes.use('b', 'b');
    expect(shapes.use('c', 'c')).toBeUndefined();
  });

  it('makes room by dropping a shape unused for longer than a connection lives, and can name it again', () => {
    const { shapes, advance } = make();
    for (const s of ['a', 'b', 'a', 'b']) shapes.use(s, s);
    const first = shapes.use('a', 'a');
    advance(600);
    shapes.use('b', 'b');
    advance(600); // a unused for 1200 ms, b for 600 ms
    shapes.use('c', 'c');
    expect(shapes.use('c', 'c')).toBeDefined();
    expect(shapes.size).toBe(2);
    expect(shapes.use('b', 'b')).toBeDefined(); // still named
    shapes.use('a', 'a');
    advance(1001);
    shapes.use('b', 'b');
    expect(shapes.use('a', 'a')).toBe(first); // c made room once idle; a's name is its text's
  });
});

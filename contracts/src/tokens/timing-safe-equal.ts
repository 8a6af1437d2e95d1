/**
 * Compare two byte arrays without an early exit on content: every byte of `a` is visited and the
 * differences are OR-accumulated, so the running time depends only on `a.length`, never on where
 * (or whether) the arrays differ. A length mismatch returns false but is folded into the same
 * accumulator instead of short-circuiting; lengths of our tokens and digests are public anyway.
 * Put the value whose length you are willing to reveal (the expected one) in `a`.
 */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) {
    // Out of range b[i] is undefined, which XOR coerces to 0: no branch on b's length.
    diff |= a[i]! ^ (b[i] as number);
  }
  return diff === 0;
}

/** timingSafeEqual over the UTF-8 bytes of two strings. */
export function timingSafeEqualString(a: string, b: string): boolean {
  const enc = new TextEncoder();
  return timingSafeEqual(enc.encode(a), enc.encode(b));
}

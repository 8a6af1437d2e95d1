import { z } from 'zod';

/**
 * Imported first by main.ts, before any module that builds or parses a schema. zod probes once whether
 * `new Function` may run, to compile faster object parsers; under the console's Content-Security-Policy
 * (script-src 'self', no 'unsafe-eval') that probe is refused, and the browser reports a CSP violation on
 * every load. `jitless` skips the probe; the console's payloads are small, so the compiled parsers would
 * save nothing anyone sees.
 */
z.config({ jitless: true });

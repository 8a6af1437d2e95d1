// Setup file of vitest.pure.config.ts: `deno task test` sets SORTIE_TEST_RUNTIME=deno, and then every test
// file must really run in Deno — a vitest change that started its workers with Node would otherwise pass
// silently and prove nothing about Deno.
if (process.env.SORTIE_TEST_RUNTIME === 'deno' && !('Deno' in globalThis)) {
  throw new Error(`SORTIE_TEST_RUNTIME=deno but this test worker runs ${process.execPath}, not Deno`);
}

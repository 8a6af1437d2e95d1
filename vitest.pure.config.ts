import { defineConfig } from 'vitest/config';

/**
 * The tests `deno task test` runs under Deno (docs/deno.md): the same *.test.ts files `npm test` runs
 * under Node, limited to those that need nothing outside the process. This list is the one place that
 * says which.
 *
 * A test qualifies when it never starts the service (testing/test-service.ts, service-child.ts), opens a
 * database (test-database.ts, PGlite), talks to NATS, opens a socket or spawns a Node child process. It
 * may read fixture files committed in the repo and spawn `openssl` (the webhook signature cross-check).
 * Everything else still runs under Node in `npm test`; the cloud as a whole is smoke-tested under Deno by
 * .ci/run (`deno task start`).
 */
const pureTests = [
  'cloud/src/imports/formats/clock-only.test.ts',
  // contracts: every test but the generator check, which runs scripts/generate.ts (buf) as a Node child.
  'contracts/src/**/*.test.ts',
  'console/src/console-logic.test.ts',
  'console/src/reading.test.ts',
  'console/src/dataset-facts.test.ts',
  'console/src/log-flight.test.ts',
  'console/src/import-logic.test.ts',
  'cloud/src/admin/parse-duration.test.ts',
  'cloud/src/imports/formats/dataflash.test.ts',
  'cloud/src/auth/principal.test.ts',
  'cloud/src/imports/formats/ulog.test.ts',
  'cloud/src/imports/formats/px4-events.test.ts',
  'cloud/src/crypto/node-crypto.test.ts',
  'cloud/src/commands/ack-tokens.test.ts',
  'cloud/src/delivery/backoff.test.ts',
  'cloud/src/delivery/micro-batcher.test.ts',
  'cloud/src/delivery/send.test.ts',
  'cloud/src/limits/crossing.test.ts',
  'cloud/src/grpc/rpc/errors.test.ts',
  'cloud/src/grpc/rpc/lazy-schema.test.ts',
  'cloud/src/grpc/rpc/series-wire.test.ts',
  'cloud/src/api-docs/docs-page.test.ts',
  'cloud/src/telemetry/narrow/decode.test.ts',
  'cloud/src/telemetry/narrow/alignment.test.ts',
  'cloud/src/telemetry/narrow/boot-sessions.test.ts',
  'cloud/src/telemetry/narrow/frame-points.test.ts',
  'cloud/src/telemetry/narrow/signal-info.test.ts',
  'cloud/src/platform/config.test.ts',
  'cloud/src/platform/metrics.test.ts',
  'cloud/src/platform/readiness.test.ts',
  'cloud/src/shutdown.test.ts',
  'cloud/src/telemetry/series/downsample.test.ts',
  'cloud/src/telemetry/series/lttb.test.ts',
  'cloud/src/telemetry/series/m4.test.ts',
  'cloud/src/telemetry/wide/point-decoder.test.ts',
  'cloud/src/telemetry/wide/query-plan.test.ts',
  'cloud/src/telemetry/wide/rollups.test.ts',
  'cloud/src/telemetry/sql/sql-arrays.test.ts',
  'cloud/src/telemetry/wide/timestamps.test.ts',
  'cloud/src/telemetry/wide/wide-batch.test.ts',
  'cloud/src/telemetry/wide/wide-values.test.ts',
  'cloud/src/templates/args-schema.test.ts',
  'cloud/src/net/address-policy.test.ts',
  'cloud/src/webhooks/secret-box.test.ts',
  'cloud/src/net/url-guard.test.ts',
  'edge-agent/src/config.test.ts',
  'edge-agent/src/framing/positioned-walkers.test.ts',
  'edge-agent/src/link/link-loss-detector.test.ts',
  'edge-agent/src/pipeline/chunk-ledger.test.ts',
  'edge-agent/src/record/agent-record.test.ts',
  'edge-agent/src/sources/capture-clock.test.ts',
  'edge-agent/src/sources/chunk-queue.test.ts',
  'edge-agent/src/sources/replay-pacer.test.ts',
  'edge-agent/src/spool/record-format.test.ts',
  'edge-agent/src/status/status.test.ts',
  'edge-agent/src/uplink/ack-tracker.test.ts',
  'edge-agent/src/uplink/backoff.test.ts',
  'edge-agent/src/uplink/cloud-api.test.ts',
  // the typed client's route coverage and the CLI's pure parts (time, tables, CSV, progress, file names)
  'client/src/**/*.test.ts',
  'cli/src/cli-pure.test.ts',
];

export default defineConfig({
  // The console's views (console/src/*.tsx) are TSX on Preact's automatic runtime, as esbuild bundles them.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  test: {
    include: pureTests,
    exclude: ['**/node_modules/**', 'contracts/src/gen-freshness.test.ts'],
    setupFiles: ['./scripts/expect-runtime.ts'],
    testTimeout: 30_000,
    reporters: ['default', './scripts/summary-reporter.ts'],
  },
});

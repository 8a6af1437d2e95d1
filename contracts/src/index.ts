export * from './core/error-codes.ts';
export * from './core/errors.ts';
export * from './core/scopes.ts';
export * from './http/index.ts';
export * from './gen/index.ts';
export * from './telemetry/bytes-fields.ts';
export * from './telemetry/point-wire.ts';
export * from './telemetry/series-tags.ts';
export * from './telemetry/varint.ts';
export * from './tokens/index.ts';
export * from './webhook/index.ts';
// The dependency-free MAVLink parts only: the dialect (mavlink/dialect.ts) loads node-mavlink, which a
// webhook receiver or a browser importing the contracts must not pull in; it is `@sortie/contracts/mavlink`.
export * from './mavlink/crc.ts';
export * from './mavlink/framer.ts';
export * from './mavlink/tlog.ts';
export * from './mavlink/signal-names.ts';
export * from './mavlink/modes.ts';
export * from './logs/signal-names.ts';
export * from './openapi/index.ts';

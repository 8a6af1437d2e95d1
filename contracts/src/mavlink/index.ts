export * from './crc.ts';
export * from './framer.ts';
export * from './tlog.ts';
export * from './signal-names.ts';
export * from './modes.ts';
export * from './dialect.ts';
export * from './time-fields.ts';

export * from './common.ts';
export * from './channels.ts';
export * from './datasets.ts';
export * from './experiments.ts';
export * from './telemetry.ts';
export * from './events.ts';
export * from './commands.ts';
export * from './arming.ts';

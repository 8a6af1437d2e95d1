export * from './routes.ts';
export * from './document.ts';
export * from './sample.ts';

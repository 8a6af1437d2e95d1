export * from './errors.ts';
export * from './scopes.ts';
export * from './http/index.ts';
export * from './gen/index.ts';
export * from './tokens/index.ts';
export * from './webhook/index.ts';
export * from './mavlink/index.ts';
export * from './openapi/index.ts';

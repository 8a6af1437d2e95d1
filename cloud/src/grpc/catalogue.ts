// What the gRPC folder tells the documentation (api-docs/, one layer up): the facts its pages print,
// read from the code that enforces them so the page cannot drift from the service.
export { SCOPE_OF as RPC_SCOPES } from './rpc/gate.ts';
export { ERROR_CODE_TRAILER, GRPC_CODE } from './rpc/errors.ts';
export { GRPC_LIMITS } from './rpc/limits.ts';
export { RPC_PREFIX } from './http-routes.ts';

import { Code, ConnectError } from '@connectrpc/connect';
import { ERROR_CODES } from '@sortie/contracts';
import { describe, expect, it, vi } from 'vitest';
import { ApiError } from '../http/api-error.ts';
import type { Logger } from '../platform/logger.ts';
import { NotYetSupportedError } from '../telemetry/sinks.ts';
import { ERROR_CODE_TRAILER, GRPC_CODE, toConnectError } from './errors.ts';

describe('gRPC status of each error code', () => {
  it('maps every code of the spec', () => {
    expect(Object.keys(GRPC_CODE).sort()).toEqual([...ERROR_CODES].sort());
    expect(GRPC_CODE).toEqual({
      invalid_request: Code.InvalidArgument,
      unauthorized: Code.Unauthenticated,
      insufficient_scope: Code.PermissionDenied,
      forbidden: Code.PermissionDenied,
      not_found: Code.NotFound,
      conflict: Code.FailedPrecondition,
      payload_too_large: Code.ResourceExhausted,
      rate_limited: Code.ResourceExhausted,
      internal_error: Code.Internal,
    });
  });

  it('keeps the message and carries the spec code in a trailer', () => {
    const error = toConnectError(new ApiError('not_found', 'no dataset 42'));
    expect(error.code).toBe(Code.NotFound);
    expect(error.rawMessage).toBe('no dataset 42');
    expect(error.metadata.get(ERROR_CODE_TRAILER)).toBe('not_found');
  });

  it('passes ConnectErrors through and answers UNIMPLEMENTED for what is not built yet', () => {
    const own = new ConnectError('too big', Code.ResourceExhausted);
    expect(toConnectError(own)).toBe(own);
    expect(toConnectError(new NotYetSupportedError('later')).code).toBe(Code.Unimplemented);
  });

  it('hides unknown failures behind INTERNAL and logs them with the request id', () => {
    const error = vi.fn();
    const logger = { error } as unknown as Logger;
    const mapped = toConnectError(new Error('relation "secret_table" does not exist'), { logger, requestId: 'req_1' });
    expect(mapped.code).toBe(Code.Internal);
    expect(mapped.rawMessage).not.toContain('secret_table');
    expect(mapped.rawMessage).toContain('req_1');
    expect(error).toHaveBeenCalledWith(expect.objectContaining({ requestId: 'req_1' }), 'unhandled gRPC error');
  });
});

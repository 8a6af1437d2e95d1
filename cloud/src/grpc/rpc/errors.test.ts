import { Code, ConnectError } from '@connectrpc/connect';
import { ERROR_CODES, ERROR_STATUS } from '@sortie/contracts';
import { describe, expect, it, vi } from 'vitest';
import { ServiceError } from '../../platform/errors.ts';
import type { Logger } from '../../platform/logger.ts';
import { NotYetSupportedError } from '../../telemetry/sinks.ts';
import { ERROR_CODE_TRAILER, GRPC_CODE, toConnectError } from './errors.ts';

describe('gRPC status of each error code', () => {
  it('maps every code of the spec to the gRPC status matching its HTTP status', () => {
    // Written by HTTP status rather than by code, so the expectation is not a copy of the table under test.
    const grpcForHttp: Record<number, Code> = {
      400: Code.InvalidArgument,
      401: Code.Unauthenticated,
      403: Code.PermissionDenied,
      404: Code.NotFound,
      408: Code.DeadlineExceeded,
      // Not ABORTED: the telemetry conflict (wrong storage shape) does not go away on a retry.
      409: Code.FailedPrecondition,
      413: Code.ResourceExhausted,
      431: Code.ResourceExhausted,
      429: Code.ResourceExhausted,
      500: Code.Internal,
      503: Code.Unavailable,
    };
    expect(Object.keys(GRPC_CODE).sort()).toEqual([...ERROR_CODES].sort());
    for (const code of ERROR_CODES) expect(GRPC_CODE[code], code).toBe(grpcForHttp[ERROR_STATUS[code]]);
  });

  it('keeps the message and carries the spec code in a trailer', () => {
    const error = toConnectError(new ServiceError('not_found', 'no dataset 42'));
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

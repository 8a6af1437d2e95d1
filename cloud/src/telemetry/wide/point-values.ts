import type { TelemetryPoint } from '@sortie/contracts';

/** The member set in a TelemetryPoint's `type` oneof, as protoc-gen-es names it. */
export type PointValueCase = NonNullable<TelemetryPoint['type']['case']>;

/**
 * How each oneof member is stored (the value mapping of the README's gRPC section): doubles and floats
 * as double precision (a float is widened exactly); int32, uint32 and enum as their exact integer; int64
 * and uint64 as exact integers in bigint / numeric(20,0) columns; bool as boolean and `empty` (an event
 * marker) as TRUE; string as text (NUL refused); bytes and bit_field as bytea, byte for byte.
 *
 * Which oneof members a wide column accepts, by the column's physical type (chosen once from the
 * channel's declared dataType, see datasets/wide-table.ts). A member is accepted only when every value
 * it can carry is stored exactly; anything else is a type mismatch, answered INVALID_ARGUMENT for the
 * whole message (nothing of it is written) rather than converted with loss.
 */
export const ACCEPTED_CASES: Readonly<Record<string, readonly PointValueCase[]>> = {
  'double precision': ['double', 'float', 'int32', 'uint32', 'enum'],
  bigint: ['int64', 'int32', 'uint32', 'enum'],
  'numeric(20,0)': ['uint64', 'int64', 'int32', 'uint32', 'enum'],
  boolean: ['bool', 'empty'],
  text: ['string'],
  bytea: ['bytes', 'bitField'],
};

/** Column types whose values are charted and rolled up (as doubles). */
export function isNumericColumn(physicalType: string): boolean {
  return physicalType === 'double precision' || physicalType === 'bigint' || physicalType === 'numeric(20,0)' || physicalType === 'boolean';
}

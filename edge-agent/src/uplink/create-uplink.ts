// Which uplink a run gets. Kept apart from uplink.ts so that the seam (the interface every uplink
// implements) does not import one of its implementations: grpc-uplink.ts implements uplink.ts, and
// only this factory knows both.
import { GrpcUplink } from './grpc-uplink.ts';
import type { GrpcUplinkOptions } from './grpc-uplink.ts';
import { spoolOnlyUplink } from './uplink.ts';
import type { CloudConfig, Uplink } from './uplink.ts';

/** The uplink for the configuration: spool only without a cloud, else the gRPC uplink. */
export function createUplink(cloud: CloudConfig | null, options?: GrpcUplinkOptions): Uplink {
  if (!cloud) return spoolOnlyUplink();
  return new GrpcUplink(cloud, options);
}

// What other packages (the uplink, end-to-end suites) use from the edge agent.
export { startAgent } from './agent.ts';
export type { AgentIo, AgentRun } from './agent.ts';
export { parseCli, parseSourceSpec, ConfigError, HELP_TEXT } from './config.ts';
export type { AgentConfig, CloudConfig, SourceSpec } from './config.ts';
export { LinkEventQueue, linkEventKey, LINK_EVENTS_FILE } from './link/link-event-queue.ts';
export type { QueuedLinkEvent } from './link/link-event-queue.ts';
export { LinkLossDetector } from './link/link-loss-detector.ts';
export type { LinkEvent, LinkLossEvent, LinkRegainedEvent } from './link/link-loss-detector.ts';
export { Pipeline } from './pipeline/pipeline.ts';
export type { PipelineStats, SystemStats } from './pipeline/pipeline.ts';
export {
  AGENT_RECORD_FLAG_RECORDED_TIME,
  AGENT_RECORD_FLAG_SOURCE_POSITION,
  AGENT_RECORD_VERSION,
  AgentRecordError,
  decodeAgentRecord,
  encodeAgentRecord,
} from './record/agent-record.ts';
export type { AgentRecord, SourcePosition } from './record/agent-record.ts';
export { FileReplaySource } from './sources/file-replay.ts';
export { SerialSource } from './sources/serial-source.ts';
export { UdpSource } from './sources/udp-source.ts';
export type { Source, SourceChunk } from './sources/source.ts';
export { Spool, SpoolFullError, SpoolClosedError } from './spool/spool.ts';
export type { SpoolRecord, SpoolStats } from './spool/spool.ts';
export { createUplink } from './uplink/create-uplink.ts';
export { spoolOnlyUplink } from './uplink/uplink.ts';
export { GrpcUplink } from './uplink/grpc-uplink.ts';
export { DATASETS_FILE } from './uplink/dataset-registry.ts';
export type { GrpcUplinkOptions } from './uplink/grpc-uplink.ts';
export type { SystemIds, Uplink, UplinkInputs, UplinkState, UplinkStatus } from './uplink/uplink.ts';

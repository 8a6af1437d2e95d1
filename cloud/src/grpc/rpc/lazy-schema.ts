import { telemetryServiceWithBytesFields, type PointBatch, type StreamSessionHeader, type TelemetryPoint } from '@sortie/contracts';

/**
 * TelemetryService as the server decodes binary requests and encodes their answers: the same file
 * descriptor, except that StreamSubmitRequest.point and .batch, SubmitRequest.points and
 * QueryResponse.series are declared `bytes` (contracts' telemetryServiceWithBytesFields). Clients see no
 * difference on the wire. The server receives those request payloads undecoded and walks them with
 * telemetry/point-decoder.ts, and writes each Series of a Query answer itself (series-wire.ts), instead
 * of materialising a message object per point (and per timestamp). JSON requests keep the generated
 * descriptor.
 */
export const LazyTelemetryService = telemetryServiceWithBytesFields({ StreamSubmitRequest: [2, 3], SubmitRequest: [3], QueryResponse: [1] });

/** A StreamSubmitRequest from either descriptor: point and batch decoded (JSON) or still encoded (binary). */
export interface AnyStreamSubmitRequest {
  message:
    | { case: 'header'; value: StreamSessionHeader }
    | { case: 'point'; value: TelemetryPoint | Uint8Array }
    | { case: 'batch'; value: PointBatch | Uint8Array }
    | { case: undefined; value?: undefined };
}

/** A SubmitRequest from either descriptor. */
export interface AnySubmitRequest {
  experimentId: string;
  datasetId: string;
  points: TelemetryPoint[] | Uint8Array[];
}

/** JSON requests (Connect, gRPC and gRPC-Web with a +json codec) go through the generated descriptor. */
export function isJsonContentType(contentType: string | undefined): boolean {
  return contentType !== undefined && /[/+]json\b/i.test(contentType);
}

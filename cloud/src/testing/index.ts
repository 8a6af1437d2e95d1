// Test fixtures of the cloud for tests outside cloud/ (`@sortie/cloud/testing`).
export { createTestDatabase } from './test-database.ts';
export type { TestDatabase } from './test-database.ts';
// The running service and raw wire calls, for the fuzz suite in test/fuzz.
export { startTestService } from './test-service.ts';
export type { TestOrg, TestResponse, TestService } from './test-service.ts';
export { callRpc, CONNECT_STREAMING, envelope, RPC_METHODS, RPC_PROTOCOLS } from './rpc-wire.ts';
export type { RpcMethod, RpcOutcome, RpcProtocol, RpcRequest } from './rpc-wire.ts';
export { mintAckToken } from '../commands/ack-tokens.ts';
// The real service with JetStream delivery, a test-made certificate and an HTTPS receiver, for the console's browser tests in test/console.
export { RECEIVER_HOST, startDeliveryFixture } from './delivery-fixture.ts';
export type { DeliveryFixture } from './delivery-fixture.ts';
export { startHttpsReceiver } from './https-receiver.ts';
export type { ReceivedRequest, TestReceiver } from './https-receiver.ts';
// Cloud child processes on a fresh database, for the fault tests in test/faults (NATS node and Postgres restarts).
export { setUpDispatchingOrg, startChildCloudFixture } from './child-cloud-fixture.ts';
export type { ChildCloudFixture, DispatchingOrg } from './child-cloud-fixture.ts';
export { startServiceChild } from './service-child.ts';
export type { ServiceChild } from './service-child.ts';
export { dropDeliveryStream, freePort, NATS_SERVER_BIN, TEST_NATS_URL, uniqueNatsNamespace, waitForPort } from './nats-server.ts';
export { eventually, verifiedBody } from './delivery-fixture.ts';
// Every stored sample of a narrow (MAVLink) dataset, whatever its physical shape, for test/edge-to-cloud.
export { readStoredSamples } from '../telemetry/read.ts';
export type { StoredSample } from '../telemetry/read.ts';
// A PostgreSQL server of a test's own, to stop, restart or preload differently (test/faults).
export { startPostgresInstance } from './postgres-instance.ts';
export type { PostgresInstance } from './postgres-instance.ts';

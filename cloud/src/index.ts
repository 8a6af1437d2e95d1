// The cloud's package entry (`@sortie/cloud`): what tests in test/ and tools outside cloud/ use to run,
// configure and provision the service. Fixtures that need a throwaway database are `@sortie/cloud/testing`.
export { SortieService } from './service/service.ts';
export type { ServiceOverrides } from './service/service.ts';
export { EnvSchema, loadConfig } from './platform/config.ts';
export type { Config } from './platform/config.ts';
export { createLogger } from './platform/logger.ts';
export { resolveSecretKey } from './platform/secret-key.ts';
export { jetStreamNames } from './delivery/nats-queue.ts';
export { createOrganization } from './auth/organizations.ts';
export { issueApiKey } from './auth/api-keys.ts';

// Test fixtures of the cloud for tests outside cloud/ (`@sortie/cloud/testing`).
export { createTestDatabase } from './test-database.ts';
export type { TestDatabase } from './test-database.ts';

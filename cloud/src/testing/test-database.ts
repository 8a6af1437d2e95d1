import pg from 'pg';
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../db/connect.ts';

/** The server integration tests run against; CI and the dev machine have PostgreSQL on loopback. */
export const TEST_ADMIN_URL = process.env.SORTIE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** A fresh database per test file, dropped afterwards, so files never see each other's rows. */
export async function createTestDatabase(adminUrl = TEST_ADMIN_URL): Promise<TestDatabase> {
  const name = `sortie_test_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** A fresh database, migrated and opened as the service opens it; `drop` closes it and drops the database. */
export type MigratedTestDatabase = DatabaseHandle & { drop(): Promise<void> };

export async function migratedTestDatabase(): Promise<MigratedTestDatabase> {
  const testDb = await createTestDatabase();
  const handle = await openDatabase({ url: testDb.url, dataDir: '.' });
  await migrateToLatest(handle.db);
  return Object.assign(handle, {
    drop: async () => {
      await handle.close();
      await testDb.drop();
    },
  });
}

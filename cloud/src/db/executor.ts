import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.ts';

/** What a repository function runs on: the pool, or a transaction it was handed. */
export type Executor = Kysely<Database> | Transaction<Database>;

import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, type Config } from './config.ts';

/**
 * The deployment key that encrypts webhook secrets at rest. A server deployment must supply it (losing
 * it makes stored secrets unreadable); the embedded default makes one beside its data so `npm start`
 * needs no setup.
 */
export async function resolveSecretKey(config: Config): Promise<Uint8Array> {
  if (config.secretKey) return decodeKey(config.secretKey);
  if (config.databaseUrl) {
    throw new ConfigError('SORTIE_SECRET_KEY is required with SORTIE_DATABASE_URL (32 random bytes, base64: `openssl rand -base64 32`)');
  }
  const file = path.resolve(config.dataDir, 'secret.key');
  try {
    return decodeKey((await readFile(file, 'utf8')).trim());
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(config.dataDir, { recursive: true });
  const key = randomBytes(32);
  await writeFile(file, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  return new Uint8Array(key);
}

function decodeKey(text: string): Uint8Array {
  const key = Buffer.from(text, 'base64');
  if (key.length !== 32) throw new ConfigError('SORTIE_SECRET_KEY must be 32 bytes, base64-encoded');
  return new Uint8Array(key);
}

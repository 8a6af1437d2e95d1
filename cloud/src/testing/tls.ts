import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

export interface TestCertificate {
  cert: string;
  key: string;
  /** The certificate as a file, for SORTIE_WEBHOOK_CA_FILE (it is its own CA). */
  certFile: string;
  remove(): Promise<void>;
}

/**
 * A self-signed certificate for the given DNS names (and 127.0.0.1), made with the openssl CLI for this
 * test run only. Node has no X.509 issuing API, and openssl is on every machine the tests run on.
 */
export async function makeSelfSignedCertificate(dnsNames: string[]): Promise<TestCertificate> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sortie-tls-'));
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  const san = [...dnsNames.map((n) => `DNS:${n}`), 'IP:127.0.0.1'].join(',');
  await promisify(execFile)('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', `/CN=${dnsNames[0]}`,
    '-addext', `subjectAltName=${san}`,
    '-addext', 'basicConstraints=critical,CA:TRUE',
  ]);
  return {
    cert: await readFile(certFile, 'utf8'),
    key: await readFile(keyFile, 'utf8'),
    certFile,
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

export interface IssuedCertificate {
  cert: string;
  key: string;
}

/**
 * A throwaway certificate authority for a TLS test, made by openssl in `dir` (good for a day):
 * its certificate is `<name>.pem`, and `issue` signs a new key pair with it, the certificate's
 * extensions (subjectAltName, extendedKeyUsage) given as an openssl extension file's lines.
 */
export function certificateAuthority(dir: string, name: string, commonName: string): { pem: string; issue(name: string, subject: string, extensions: string): IssuedCertificate } {
  const file = (base: string) => path.join(dir, base);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', `/CN=${commonName}`, '-keyout', file(`${name}.key`), '-out', file(`${name}.pem`));
  return {
    pem: file(`${name}.pem`),
    issue(issued, subject, extensions) {
      openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', subject, '-keyout', file(`${issued}.key`), '-out', file(`${issued}.csr`));
      writeFileSync(file(`${issued}.ext`), extensions);
      openssl('x509', '-req', '-in', file(`${issued}.csr`), '-CA', file(`${name}.pem`), '-CAkey', file(`${name}.key`), '-CAcreateserial', '-days', '1', '-extfile', file(`${issued}.ext`), '-out', file(`${issued}.pem`));
      return { cert: file(`${issued}.pem`), key: file(`${issued}.key`) };
    },
  };
}

import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { createRedactor } from '@retrysafe/core/internal';

/** Scrubbed as receipts are: the upstream's output may quote a credential. */
const scrub = createRedactor();

/** The upstream's stderr onto the fence's, line by line, scrubbed. A private key spans lines: its first line is
 * blanked whole, the lines after it are left out up to its last (a bound, should its end never come). */
export function relayStderr(stream: Readable | null): void {
  if (!stream) return;
  let keyLines = 0;
  createInterface({ input: stream, crlfDelay: Infinity }).on('line', (l) => {
    const end = /END [A-Z ]*PRIVATE KEY-----/.test(l);
    if (keyLines > 0) keyLines = end ? 0 : keyLines - 1;
    else {
      if (!end && /BEGIN [A-Z ]*PRIVATE KEY-----/.test(l)) keyLines = MAX_KEY_LINES;
      process.stderr.write(`${scrub.text(l)}\n`);
    }
  });
}
const MAX_KEY_LINES = 200;

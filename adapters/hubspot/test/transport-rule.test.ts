// A failure with no answer is classified by the contract's one transport rule: "not applied" only when every
// error code along the chain proves the request was never sent.
import { classifyTransportFailure } from '@retrysafe/contract/provider';
import { describe, expect, it } from 'vitest';
import { outcomeFromNetworkError } from '../src/hubspot-errors.js';

const coded = (code: string) => Object.assign(new Error(code), { code });
// Node's happy-eyeballs error: an AggregateError carrying its first error's code.
const aggregate = (...codes: string[]) =>
  Object.assign(new AggregateError(codes.map(coded), 'connect failed'), { code: codes[0] });

describe('hubspot: a failure with no answer', () => {
  it.each([
    [
      'refused everywhere',
      new TypeError('fetch failed', { cause: aggregate('ECONNREFUSED', 'ECONNREFUSED') }),
      'not-applied',
    ],
    [
      'refused, then reset after connecting',
      new TypeError('fetch failed', { cause: aggregate('ECONNREFUSED', 'ECONNRESET') }),
      'unknown',
    ],
    ['refused, then timed out', aggregate('ECONNREFUSED', 'ETIMEDOUT'), 'unknown'],
    [
      'a socket error caused by a refusal',
      Object.assign(new Error('other side closed', { cause: coded('ECONNREFUSED') }), { code: 'UND_ERR_SOCKET' }),
      'unknown',
    ],
  ])('%s ⇒ %s, as the contract reads it', (_, err, kind) => {
    expect(outcomeFromNetworkError(err, { started: true }).kind).toBe(kind);
    expect(classifyTransportFailure(err).sent === 'never').toBe(kind === 'not-applied');
  });
});

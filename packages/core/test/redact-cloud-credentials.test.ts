// Cloud credentials with no prefix of their own, bare in free text: found only where their shape is specific enough
// not to blank ordinary text (as secret scanners decide), and the ids and hashes beside them stay.
import { createRedactor, detectSensitive } from '@retrysafe/core/internal';
import { describe, expect, it } from 'vitest';

const REDACTED = '[redacted]';
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYzEXAMPLE12';
const SHA1 = 'da39a3ee5e6b4b0d3255bfef95601890afd80709';
// An Entra ID (Microsoft identity platform) refresh token: `0.A`, a segment, `.Ag` and a long one.
const REFRESH = `0.AXEA${'kLmN0pQrStUvWxYz-_ab'.repeat(3)}.Ag${'AbCdEfGhIj0123456789_-'.repeat(12)}`;

describe('an AWS secret access key bare in free text', () => {
  it('is blanked beside its access key id (an STS answer, a pasted pair); a hash or a lone base64 id stays', () => {
    const r = createRedactor();
    const sts = `<AccessKeyId>ASIAY34FZKBOKMUTVV7A</AccessKeyId><SecretAccessKey>${AWS_SECRET}</SecretAccessKey>`;
    expect(r.text(sts)).toBe(`<AccessKeyId>${REDACTED}</AccessKeyId><SecretAccessKey>${REDACTED}</SecretAccessKey>`);
    expect(r.text(`keys AKIAIOSFODNN7EXAMPLE ${AWS_SECRET} (rotated)`)).toBe(`keys ${REDACTED} ${REDACTED} (rotated)`);
    expect(detectSensitive(`pair AKIAIOSFODNN7EXAMPLE / ${AWS_SECRET}`)).not.toBeNull();
    // A commit hash beside a key id is not a secret key; 40 base64 characters alone (a provider's reference) are not
    // taken for one: too many ids have that shape.
    expect(r.text(`AKIAIOSFODNN7EXAMPLE at ${SHA1}`)).toBe(`${REDACTED} at ${SHA1}`);
    expect(r.text(`ref ${AWS_SECRET}`)).toBe(`ref ${AWS_SECRET}`);
  });
});

describe('a Microsoft refresh token bare in free text', () => {
  it('is blanked whole; a version number or a short `0.A` word stays', () => {
    const r = createRedactor();
    expect(r.text(`token ${REFRESH} was revoked`)).toBe(`token ${REDACTED} was revoked`);
    expect(detectSensitive(REFRESH)).not.toBeNull();
    for (const s of ['upgrade from 0.A1 to 0.B2', `0.A${'x'.repeat(60)}`]) expect(r.text(s), s).toBe(s);
  });
});

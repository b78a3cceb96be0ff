import { AdapterConfigurationError } from '../errors.js';

/** A positive whole-number adapter option, or its default; anything else is an AdapterConfigurationError. */
export function positiveInteger(provider: string, name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v <= 0)
    throw new AdapterConfigurationError(provider, `${name} must be a positive integer, got ${String(value)}`);
  return v;
}

/** True for a loopback host: 127.0.0.0/8, ::1 and the name localhost (and its subdomains, RFC 6761 §6.3). */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost') || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  if (/^127(\.\d{1,3}){3}$/.test(h)) return h.split('.').every((p) => Number(p) <= 255);
  // IPv4-mapped IPv6, dotted or as WHATWG URL prints it (::ffff:7f00:1)
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(h);
  if (mapped) return isLoopbackHost(mapped[1]!);
  const hex = /^::ffff:([0-9a-f]{1,4}):[0-9a-f]{1,4}$/.exec(h);
  return hex ? parseInt(hex[1]!, 16) >> 8 === 127 : false;
}

/** `https:`, or `http:` only to a loopback sandbox; no user-info. The error never repeats the URL (a secret). */
export function checkBaseUrl(provider: string, value: unknown, what = 'baseUrl'): URL {
  const refuse = (why: string) => new AdapterConfigurationError(provider, `${what} ${why}`);
  if (typeof value !== 'string' || value.trim() === '') throw refuse('must be an absolute URL string');
  const url = URL.parse(value);
  if (url === null) throw refuse('is not a URL (it is not an absolute URL)');
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw refuse(`must be https (or http to a loopback sandbox), got ${url.protocol}`);
  if (url.username !== '' || url.password !== '')
    throw refuse("must not carry user-info (user:password@): pass credentials through the adapter's options");
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname))
    throw refuse(
      'may use plain http only for a loopback sandbox (127.0.0.0/8, ::1, localhost): credentials would travel in clear',
    );
  return url;
}

/** A token the adapter sends in a header, checked when it is built: a line break (a file read with its newline) or any
 * character outside printable ASCII would refuse every request, each after its claim. The error never repeats it. */
export function checkToken(provider: string, name: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') throw new AdapterConfigurationError(provider, `${name} is required`);
  if (!/^[\x21-\x7e]+$/.test(value))
    throw new AdapterConfigurationError(
      provider,
      `${name} must be printable ASCII without spaces: it holds a line break (read with its newline?), a space or a character no header carries (a placeholder such as … left in?)`,
    );
  return value;
}

import { parseReceiptKeys } from '@retrysafe/core';
import { createRedactor, detectSensitive, isSecretKey, keyParts } from '@retrysafe/core/internal';
import { ConfigError } from './read-file.js';

// A config file is committed, copied and pasted into tickets, so a credential in it is refused: by its key, by its
// value (the redactor's detectors) and inside URLs. Each problem names the place, never the value.

/** A template placeholder of an HTTP declaration or a fence file: `{key}`, `{params.ref}`, `{{customer}}`. */
const TEMPLATE = /\{\{?\s*[\w.]+\s*\}?\}/g;

/** What an environment variable name looks like (POSIX portable names, as shells accept them). */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Query parameters that carry credentials in practice, besides secret-named ones. */
const SECRET_QUERY = /^(key|sig|code|x-amz-signature|x-amz-credential|x-goog-signature)$/i;

export function looksLikeEnvName(name: unknown): name is string {
  return typeof name === 'string' && ENV_NAME.test(name) && detectSensitive(name, { pii: false }) === null;
}

/** The credential an environment variable holds, undefined when it is unset or empty; `path` is what the error names
 * besides the variable. The value is never shown. */
export function secretFromEnv(
  name: string,
  environment: NodeJS.ProcessEnv = process.env,
  path = '',
): string | undefined {
  // Own keys only: `constructor` or `toString` would read the object's inherited function as the secret.
  const v = Object.hasOwn(environment, name) ? environment[name] : undefined;
  if (typeof v !== 'string' || !v) return undefined;
  // A CRLF .env file leaves a `\r`: the SDK would fail before sending, and the runner could not tell that from a lost answer.
  if (v.trim() !== v || /[\x00-\x1f\x7f]/.test(v))
    throw new ConfigError(
      path,
      `environment variable ${name} has whitespace or control characters around or in it (a line ending from a .env file?): remove them`,
    );
  return v;
}

/** The keys an environment variable holds (`id:secret[,…]`, as RETRYSAFE_RECEIPT_KEYS and RETRYSAFE_PARAMS_KEYS), null
 * when it is unset or empty; a malformed value is a ConfigError naming the variable, never the secret. */
export function keysFromEnv(name: string, environment: NodeJS.ProcessEnv = process.env) {
  const text = secretFromEnv(name, environment);
  if (text === undefined) return null;
  try {
    return parseReceiptKeys(text);
  } catch (err) {
    throw new ConfigError(name, (err as Error).message);
  }
}

/** A key whose value is the NAME of an environment variable (`apiKeyEnv`, `accessTokenEnv`, …). */
const isEnvNameKey = (key: string) => keyParts(key).at(-1) === 'env';

/** `base.key` or `base["key"]`, scrubbed: a credential pasted as a key is not repeated by the error naming it. */
const pathOf = (base: string, key: string) =>
  safeMessage(
    /^[A-Za-z_$][\w$]*$/.test(key)
      ? [base, key].filter(Boolean).join('.')
      : `${base}[${JSON.stringify(key.replace(/[^\w .-]/g, '?'))}]`,
  );

/** Problems of a string that is a URL (null when it is not one): user-info, secret query parameters, a credential elsewhere in it. */
function urlProblems(value: string, path: string): string[] | null {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return null;
  const url = URL.parse(value);
  if (!url) return null;
  const out: string[] = [];
  const pg = /^postgres(ql)?:$/i.test(url.protocol);
  // A database user name is not a secret; anywhere else a bare user-info is usually a token.
  if (url.password || (url.username && !pg)) {
    out.push(
      pg
        ? `${path}: the URL carries a password: drop it (postgres://user@host/db) and set PGPASSWORD in the environment, or use a ~/.pgpass file`
        : `${path}: the URL carries user:password: drop it and pass the credential through an environment variable (an adapter's *Env option, or secretsFromEnv)`,
    );
  }
  for (const k of new Set(url.searchParams.keys())) {
    if (isSecretKey(k) || SECRET_QUERY.test(k)) {
      out.push(
        `${path}: the URL's query parameter '${k.replace(/[^\w.-]/g, '?')}' carries a credential: pass it through an environment variable (secretsFromEnv) instead`,
      );
    }
  }
  const rest = `${url.protocol}//${url.host}${url.pathname}${[...url.searchParams.values()].join(' ')}${url.hash}`;
  const kind = detectSensitive(decodeURIComponent(rest), { pii: false });
  if (kind)
    out.push(
      `${path}: the URL holds what looks like a credential (${kind}; not shown): pass it through an environment variable instead`,
    );
  return out;
}

/** Every inline credential in a raw config object; `*Env` keys must hold environment-variable names. */
export function findInlineCredentials(raw: unknown): string[] {
  const problems: string[] = [];
  const envName = (v: unknown, path: string) => {
    if (looksLikeEnvName(v)) return;
    problems.push(
      typeof v === 'string' && detectSensitive(v, { pii: false }) !== null
        ? `${path}: expected the NAME of an environment variable (like STRIPE_API_KEY), got what looks like a credential (not shown): put the credential in the environment and its name here`
        : `${path}: expected the NAME of an environment variable (letters, digits and _, not starting with a digit)`,
    );
  };
  const walk = (v: unknown, path: string) => {
    if (typeof v === 'string') {
      // A declaration's template (`/instances?ClientToken={key}`, `{{ref}}`) names a value, it holds none.
      const text = v.replace(TEMPLATE, '');
      const inUrl = urlProblems(text, path);
      if (inUrl) {
        problems.push(...inUrl);
        return;
      }
      const kind = detectSensitive(text, { pii: false });
      if (kind)
        problems.push(
          `${path}: looks like a credential (${kind}; not shown): credentials come from environment variables only (an adapter's *Env option, or secretsFromEnv)`,
        );
      return;
    }
    if (Array.isArray(v)) {
      v.forEach((x, i) => walk(x, `${path}[${i}]`));
      return;
    }
    if (!v || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      const p = pathOf(path, k);
      if (isEnvNameKey(k)) {
        // `secretsFromEnv`, `headersFromEnv`, …: a map of option/header ⇒ environment-variable NAME.
        if (x && typeof x === 'object' && !Array.isArray(x))
          for (const [option, name] of Object.entries(x)) envName(name, pathOf(p, option));
        else envName(x, p);
        continue;
      }
      // A JSON Schema of params names its fields (`password: { type: 'string' }`): keys there are not values.
      if (k === 'paramsSchema') continue;
      if (isSecretKey(k) && !(typeof x === 'string' && x.replace(TEMPLATE, '').trim() === '')) {
        problems.push(
          `${p}: credentials come from environment variables only (use e.g. apiKeyEnv / accessTokenEnv naming the variable, or secretsFromEnv: { ${JSON.stringify(safeMessage(k.trim()).replace(/[^\w-]/g, '') || 'option')}: "MY_VARIABLE" } for a module adapter)`,
        );
        continue;
      }
      walk(x, p);
    }
  };
  walk(raw, '');
  return problems;
}

/** A parser's, a driver's or the system's message with anything credential-like or personal blanked (JSON/YAML errors
 * quote the text): a ConfigError quotes nothing else it did not write, so the CLI prints it as it is. */
export const safeMessage = createRedactor().text;

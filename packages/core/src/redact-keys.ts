// Which keys name secrets or personal data, matched by a key's parts.

/** A key's parts: `X-Auth-Token` → x, auth, token; `dbPassword` → db, password. Letters of any script count, in
 * compatibility normal form (a decomposed `ñ` or a full-width `ｐ` is the letter the lists hold). */
export function keyParts(key: string): string[] {
  return key
    .normalize('NFKC')
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean)
    .map((p) => p.toLowerCase());
}

const words = (text: string) => new Set(text.trim().split(/\s+/));

/** One part is enough. */
const SECRET_PARTS = words(`
  password passwd pwd pass passphrase passcode secret secrets token tokens auth authorization authentication
  bearer credential credentials creds cookie cookies apikey privatekey signature pin cvc cvv cvv2 csc ssn otp mfa
  totp jwt sessionid pan iban sin
  passwort kennwort geheimnis motdepasse contraseña contrasena clave senha wachtwoord lösenord losenord salasana
  hasło haslo parola heslo jelszó jelszo пароль секрет токен 密码 パスワード 비밀번호
`);
/** Two adjacent parts, joined. */
const SECRET_PAIRS = words(`
  apikey accesskey privatekey secretkey signingkey encryptionkey masterkey sessionkey clientsecret cardnumber
  accountnumber routingnumber securitycode sessionid motdepasse setcookie socialsecurity
`);
const CURSORS = words('progress page next continuation sync delta skip');
const PII_PARTS = words(`
  email emails phone mobile mobilephone fax telephone tel dob birthdate birthday address street postcode zip passport nationalid
  taxid ip
`);
const PII_PAIRS = words(`
  emailaddress phonenumber dateofbirth birthdate postalcode zipcode ipaddress nationalid taxid lastname firstname
  fullname surname
`);

function partsMatch(parts: readonly string[], singles: ReadonlySet<string>, pairs: ReadonlySet<string>): boolean {
  for (let i = 0; i < parts.length; i++) {
    if (singles.has(parts[i]!)) return true;
    if (i + 1 < parts.length && pairs.has(parts[i]! + parts[i + 1]!)) return true;
    if (i + 2 < parts.length && pairs.has(parts[i]! + parts[i + 1]! + parts[i + 2]!)) return true;
  }
  return pairs.has(parts.join(''));
}

// The same key names come back on every operation: each verdict is worked out once, in a bounded cache.
const verdicts = new Map<string, { readonly secret: boolean; readonly pii: boolean }>();

/** Whether a key names a secret (whatever the caller declares) and whether it names personal data (off with `pii: false`). */
export function keyVerdict(key: string): { readonly secret: boolean; readonly pii: boolean } {
  let v = verdicts.get(key);
  if (v === undefined) {
    // A token that marks a place in a list or a progress report (`pageToken`, MCP's `progressToken`) opens nothing.
    const parts = keyParts(key).filter((p, i, all) => p !== 'token' || !CURSORS.has(all[i - 1]!));
    v = { secret: partsMatch(parts, SECRET_PARTS, SECRET_PAIRS), pii: partsMatch(parts, PII_PARTS, PII_PAIRS) };
    if (verdicts.size >= 4096) verdicts.clear();
    verdicts.set(key, v);
  }
  return v;
}

/** Whether a key names a secret whatever the caller declares (matched by parts, any case or separator). */
export const isSecretKey = (key: string): boolean => keyVerdict(key).secret;

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportReceiptsJsonl, jsonlHandoffSink, type LogEntry } from '@retrysafe/core';
import { createRedactor, detectSensitive, isSecretKey } from '@retrysafe/core/internal';
import { afterAll, describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

const REDACTED = '[redacted]';
const SECRET = 'sk_live_51Hq9ZsEcReTvAlUe0xyz';
const PII = 'alice.private@example.test';
const PHONE = '+44 7700 900123';
const dir = mkdtempSync(join(tmpdir(), 'retrysafe-redact-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Each input reads as its expected text, and detectSensitive finds something in it. */
function expectBlanked(r: ReturnType<typeof createRedactor>, samples: readonly [string, string][]) {
  for (const [input, expected] of samples) {
    expect(r.text(input), input).toBe(expected);
    expect(detectSensitive(input), input).not.toBeNull();
  }
}

describe('redaction: a secret and PII in params never reach receipts, packets, exports or logs', () => {
  it('holds across success, lost response, lookup, rejection and handoff', async () => {
    const logs: LogEntry[] = [];
    const packetsFile = join(dir, 'handoffs.jsonl');
    const { provider, adapter, runner, ledger } = setup(
      { replays: false, retentionMs: null },
      {
        logger: (e) => logs.push(e),
        redact: { fields: ['customer.email'], patterns: [/\+44 \d{4} \d{6}/g] },
        handoff: jsonlHandoffSink(packetsFile),
      },
      { sensitiveFields: ['customer.phone'] },
    );
    const params = (ref: string) => ({
      ref,
      note: `charge with ${SECRET}`,
      customer: { email: PII, phone: PHONE, name: 'A.' },
    });

    // 1: lost response, reconciled by lookup
    provider.failNext({ kind: 'unknown-after-commit' });
    const a = await runner.run(adapter, 'records.create', { params: params('r-1') });
    expect(a.status).toBe('done');
    // 2: the provider echoes the secret and the PII in its error message; handed off
    provider.failNext({ kind: 'rejected', message: `customer ${PII} (${PHONE}) not allowed for key ${SECRET}` });
    const b = await runner.run(adapter, 'records.create', { params: params('r-2') });
    expect(b.status).toBe('handed-off');
    const everything = [
      JSON.stringify(a),
      JSON.stringify(b),
      await exportReceiptsJsonl(ledger),
      readFileSync(packetsFile, 'utf8'),
      JSON.stringify(logs),
      JSON.stringify((await ledger.list()).map((r) => r.handoff)),
    ].join('\n');
    expect(logs.length).toBeGreaterThan(5);
    expect(everything).toContain('[redacted]');
    for (const needle of [SECRET, PII, PHONE, 'sk_live_', 'alice.private']) expect(everything).not.toContain(needle);
    // The ledger keeps the params so a resume or recovery can re-send the same request.
    expect((await ledger.get(a.businessOperationId))!.params).toEqual(params('r-1'));
  });

  it('the redactor: declared fields at any depth, dot paths, secret-named keys, secret-looking strings, declared values in free text', () => {
    const r = createRedactor({ fields: ['email', 'card.number'], patterns: [/ACCT-\d+/] }).withValuesFrom({
      email: 'bob@example.test',
    });
    const input = {
      a: { email: 'x@y.z' },
      card: { number: '4242', exp: '12/30' },
      number: 7,
      password: 'hunter2',
      list: [{ token: 't' }],
      text: 'Bearer abc.def ACCT-991',
    };
    expect(r.params(input)).toEqual({
      ...input,
      a: { email: REDACTED },
      card: { number: REDACTED, exp: '12/30' },
      password: REDACTED,
      list: [{ token: REDACTED }],
      text: `${REDACTED} ${REDACTED}`,
    });
    expect(r.text('failed for bob@example.test with sk_test_abcdef1234')).toBe('failed for [redacted] with [redacted]');
  });

  it('key rules match by parts, in any case, separator or language', () => {
    const secret = [
      'X-Auth-Token',
      'x-auth-token',
      'apiToken',
      'dbPassword',
      'db_password',
      'bearer',
      'auth',
      'credentials',
      'passphrase',
      'pin',
      'cvc',
      'ssn',
      'passwort',
      'пароль',
      'contraseña',
      'apiKey ',
      'X-Api-Key',
      'privateKey',
      'bearerToken',
      'client_secret',
      'cardNumber',
      'Authorization',
    ];
    const plain = [
      'amount',
      'currency',
      'customer',
      'orderRef',
      'author',
      'providerKey',
      'idempotencyKey',
      'description',
      'spinner',
      'opinion',
      'tokenizer',
    ];
    for (const k of secret) expect(isSecretKey(k), k).toBe(true);
    for (const k of plain) expect(isSecretKey(k), k).toBe(false);
    const r = createRedactor();
    const out = r.params(Object.fromEntries([...secret, ...plain].map((k) => [k, 'v4lue-kept?']))) as Record<
      string,
      unknown
    >;
    for (const k of secret) expect(out[k], k).toBe('[redacted]');
    for (const k of plain) expect(out[k], k).toBe('v4lue-kept?');
  });

  it('value detectors blank credentials and PII in any free text', () => {
    const r = createRedactor();
    const samples: [string, string][] = [
      ['AWS', 'key AKIAIOSFODNN7EXAMPLE rejected'],
      ['Google', 'AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY'],
      ['Stripe restricted', 'rk_live_51Habcdefghij'],
      ['Stripe webhook', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      ['Basic', 'Authorization: Basic dXNlcjpodW50ZXIy'],
      ['Bearer', 'bearer abc123def456'],
      ['URL user-info', 'cannot reach postgres://app:hunter2@db.internal:5432/x'],
      ['card', 'card 4242 4242 4242 4242 declined'],
      ['card, dashes', '4000-0566-5566-5556'],
      ['email', 'customer alice.private@example.test exists'],
      ['free text key', 'passwort=geheim123 und {"apiToken":"t0k3n-v"}'],
    ];
    for (const [kind, s] of samples) {
      const out = r.text(s);
      expect(out, kind).toContain('[redacted]');
      expect(detectSensitive(s), kind).not.toBeNull();
    }
    expect(r.text('cannot reach postgres://app:hunter2@db.internal:5432/x')).toBe(
      'cannot reach postgres://[redacted]@db.internal:5432/x',
    );
    expect(r.text('passwort=geheim123 und {"apiToken":"t0k3n-v"}')).toBe(
      'passwort=[redacted] und {"apiToken":"[redacted]"}',
    );
    // Not everything long is a secret: ids, amounts, dates and refs stay readable.
    for (const s of [
      'pi_3NkQf2Lz0abc',
      'amount 1000 eur',
      '2026-12-01T07:00:00.000Z',
      'HTTP 409 idempotency_key_in_use',
      '4242 4242 4242 4241',
      'retry in 1500 ms',
      'Basic authentication failed',
      'at 1764572400000 ms',
      'hubspot object 17000000000001',
    ])
      expect(r.text(s), s).toBe(s);
  });

  it('params(): each rule blanks its own part, plain params come back as they are', () => {
    const r = createRedactor({ fields: ['customer.phone'], patterns: [/ACCT-\d+/] });
    const plain = { orderRef: 'A-17', amount: 1500, lines: [{ sku: 's1', qty: 2 }] };
    expect(r.params(plain)).toEqual(plain);
    expect(r.params({ orderRef: 'A-17', password: 'hunter2' })).toEqual({ orderRef: 'A-17', password: REDACTED });
    expect(r.params({ customer: { phone: '+44 1' } })).toEqual({ customer: { phone: REDACTED } });
    expect(r.params({ note: 'mail alice@example.test' })).toEqual({ note: `mail ${REDACTED}` });
    expect(r.params({ 'alice@example.test': 1 })).toEqual({ [REDACTED]: 1 });
    expect(r.params({ note: 'ACCT-991' })).toEqual({ note: REDACTED });
    expect(r.params({ n: 4242424242424242 })).toEqual({ n: REDACTED });
    expect(r.withValuesFrom({ password: 'hunter22' }).params({ note: 'it is hunter22' })).toEqual({
      note: `it is ${REDACTED}`,
    });
  });

  it("text() gives the same answer on every call, and never one redactor's answer to another", () => {
    const plain = createRedactor();
    const withValue = plain.withValuesFrom({ password: 'hunter22' });
    const t = 'login hunter22 failed';
    expect(plain.text(t)).toBe(t);
    expect(withValue.text(t)).toBe('login [redacted] failed');
    expect(plain.text(t)).toBe(t); // the other redactor's answer is not this one's
    expect(withValue.text(t)).toBe('login [redacted] failed');
    const long = `${'x'.repeat(200)} alice@example.test`;
    expect(withValue.text(long)).toBe(`${'x'.repeat(200)} [redacted]`);
  });

  it('blanks a bearer token, a card number and an email address inside text', () => {
    const r = createRedactor();
    expect(r.text('Authorization: Bearer abc.def-ghi')).toBe('Authorization: [redacted]');
    expect(r.text('card 4242 4242 4242 4242 ok')).toBe('card [redacted] ok');
    expect(r.text('mail me at someone@example.com')).toBe('mail me at [redacted]');
    expect(r.text('the provider performed it')).toBe('the provider performed it');
  });

  it('PII detectors are on by default; pii: false turns them off, never the secret ones', () => {
    const on = createRedactor();
    const off = createRedactor({ pii: false });
    expect(on.text('to bob@example.test')).toBe('to [redacted]');
    expect(off.text('to bob@example.test')).toBe('to bob@example.test');
    expect(on.params({ email: 'x', phone: 'y' })).toEqual({ email: '[redacted]', phone: '[redacted]' });
    expect(off.params({ email: 'x', phone: 'y' })).toEqual({ email: 'x', phone: 'y' });
    expect(off.text('sk_live_abcdef123456 and 4242424242424242')).toBe('[redacted] and [redacted]');
    expect(() => createRedactor({ pii: 'no' as never })).toThrow(TypeError);
  });

  it("copies keep an own __proto__ key as data, never as the copy's prototype", () => {
    const input = JSON.parse(
      '{"__proto__": {"polluted": "yes", "password": "p"}, "a": {"__proto__": {"x": 1}}}',
    ) as Record<string, unknown>;
    const out = createRedactor().params(input) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toEqual(['__proto__', 'a']);
    expect(JSON.stringify(out)).toBe(
      '{"__proto__":{"polluted":"yes","password":"[redacted]"},"a":{"__proto__":{"x":1}}}',
    );
    expect((out as { polluted?: unknown }).polluted).toBeUndefined();
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });
});

describe('redactor.params: a copy only where something is redacted', () => {
  it('hands back the value itself when nothing in it is sensitive, and never changes what it was given', () => {
    const redactor = createRedactor({ fields: ['customer.email'] });
    const clean = { ref: 'PO-1', lines: [{ sku: 'A', qty: 2 }], at: 'tomorrow' };
    expect(redactor.params(clean)).toBe(clean);

    const dirty = { ref: 'PO-2', customer: { email: PII, name: 'Ann' }, lines: [{ sku: 'A' }], token: SECRET };
    const before = structuredClone(dirty);
    const out = redactor.params(dirty) as typeof dirty;
    expect(out).not.toBe(dirty);
    expect(out).toEqual({
      ref: 'PO-2',
      customer: { email: REDACTED, name: 'Ann' },
      lines: [{ sku: 'A' }],
      token: REDACTED,
    });
    expect(out.lines).toBe(dirty.lines); // untouched parts are shared, not copied
    expect(dirty).toEqual(before);
  });
});

describe('redactor.text: a remembered answer is the same answer', () => {
  it('answers a repeated text as the first time, for short and long texts, and per redactor', () => {
    const redactor = createRedactor();
    const short = `token=${SECRET} for ${PII}`;
    const long = `${'x'.repeat(300)} Bearer ${SECRET}`;
    for (const t of [short, long, 'plain words']) expect(redactor.text(t)).toBe(redactor.text(t));
    expect(redactor.text(short)).not.toContain(SECRET);
    expect(redactor.text(short)).not.toContain(PII);
    expect(redactor.text(long)).not.toContain(SECRET);
    expect(redactor.text('plain words')).toBe('plain words');
    // A redactor holding an operation's values answers for itself, not from the base's memory.
    const withValue = redactor.withValuesFrom({ password: 'hunter22' });
    expect(redactor.text('said hunter22')).toBe('said hunter22');
    expect(withValue.text('said hunter22')).toBe(`said ${REDACTED}`);
    expect(redactor.text('said hunter22')).toBe('said hunter22');
  });
});

describe('secret-named keys in other unicode forms, and whole values after them in free text', () => {
  it('a key typed decomposed (NFD) or in full-width letters is the same secret-named key, in params and in text', () => {
    const r = createRedactor();
    for (const key of ['contraseña', 'パスワード', '비밀번호', 'ｐａｓｓｗｏｒｄ', 'ＡＰＩ＿ＫＥＹ', 'ｅｍａｉｌ']) {
      for (const form of [key, key.normalize('NFD')]) {
        expect(r.params({ [form]: 'hunter2-kept?' }), form).toEqual({ [form]: REDACTED });
        expect(r.withValuesFrom({ [form]: 'hunter2-kept?' }).text('echo hunter2-kept?'), form).toBe(`echo ${REDACTED}`);
      }
    }
    for (const key of ['contraseña'.normalize('NFD'), 'ｐａｓｓｗｏｒｄ', '비밀번호'.normalize('NFD')])
      expect(r.text(`{"${key}":"hunter2-kept?"}`), key).toBe(`{"${key}":"${REDACTED}"}`);
  });

  it('a quoted value is blanked whole (spaces, commas, escaped quotes), and an object or array value whole', () => {
    const r = createRedactor();
    const samples: [string, string][] = [
      ['{"password":"correct horse battery staple"}', `{"password":"${REDACTED}"}`],
      ["password='correct horse' rejected", `password='${REDACTED}' rejected`],
      ['{"apiKey": "a,b;c d", "ok": 1}', `{"apiKey": "${REDACTED}", "ok": 1}`],
      ['{"token":"ab\\"cd ef","n":2}', `{"token":"${REDACTED}","n":2}`],
      ['{"credentials":{"user":"bob","pass":"x y"},"n":2}', `{"credentials":${REDACTED},"n":2}`],
      ['{"secrets":["abc def","ghi"]} rejected', `{"secrets":${REDACTED}} rejected`],
      ['body {"auth":{"user":"bob"', `body {"auth":${REDACTED}`],
      ['password: correct horse', `password: ${REDACTED} horse`],
      ['{"password":""}', '{"password":""}'],
    ];
    for (const [input, expected] of samples) expect(r.text(input), input).toBe(expected);
    for (const leak of ['battery', 'correct', 'a,b', 'cd ef', 'bob', 'x y', 'abc def', 'ghi'])
      expect(samples.map(([input]) => r.text(input)).join(' '), leak).not.toContain(leak);
  });
});

describe('a sensitive value echoed in another unicode normal form', () => {
  it('is blanked in text whether it was given composed (NFC) or decomposed (NFD)', () => {
    for (const [given, echoed] of [
      ['José Pérez'.normalize('NFD'), 'José Pérez'.normalize('NFC')],
      ['Zoë Åkesson'.normalize('NFC'), 'Zoë Åkesson'.normalize('NFD')],
    ] as const) {
      const r = createRedactor({ fields: ['name'] }).withValuesFrom({ name: given, ref: 'o-1' });
      expect(r.text(`customer ${echoed} already exists`), echoed).toBe(`customer ${REDACTED} already exists`);
      expect(r.text(`customer ${given} already exists`), given).toBe(`customer ${REDACTED} already exists`);
    }
  });
});

describe('a sensitive value that occurs inside a credential in the same text', () => {
  // Blanking the value first cut the credential apart, so no detector matched what was left of it.
  // The pin of the first case, 424242, occurs inside the key; 6 digits, so no random hex id or hash holds it by chance.
  const KEY = 'sk_live_51Hq9Zs424242EcReTvAlUe0xyz';
  const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0MjQyIn0.c2lnbmF0dXJlNDI0Mg';

  it('leaves no part of the credential in a handoff packet, receipts or logs', async () => {
    const logs: LogEntry[] = [];
    const { provider, adapter, runner, ledger, packets } = setup(
      {},
      { logger: (e) => logs.push(e) },
      { sensitiveFields: ['customer.pin'] },
    );
    provider.failNext({ kind: 'rejected', message: `key ${KEY} may not charge (session ${JWT})` });
    const b = await runner.run(adapter, 'records.create', { params: { ref: 'r-9', customer: { pin: '424242' } } });
    expect(b.status).toBe('handed-off');
    const everything = [JSON.stringify(packets), await exportReceiptsJsonl(ledger), JSON.stringify(logs)].join('\n');
    expect(everything).toContain('may not charge');
    for (const piece of ['424242', 'EcReTvAlUe0xyz', 'sk_live_51Hq9Zs', 'eyJzdWIiOiI0', 'c2lnbmF0dXJl'])
      expect(everything).not.toContain(piece);
  });

  it('blanks the credential whole, and a value that holds a credential whole as well', () => {
    const r = createRedactor({ fields: ['pin', 'contact'], patterns: [/ACCT-\d+/] }).withValuesFrom({
      pin: '4242',
      contact: 'Jane Roe <jane.roe@example.test>',
    });
    expect(r.text(`key ${KEY} refused`)).toBe(`key ${REDACTED} refused`);
    expect(r.text(`session ${JWT}.`)).toBe(`session ${REDACTED}.`);
    expect(r.text('account ACCT-1424249 closed')).toBe(`account ${REDACTED} closed`);
    expect(r.text('pin 4242 wrong')).toBe(`pin ${REDACTED} wrong`);
    expect(r.text('to Jane Roe <jane.roe@example.test> failed')).toBe(`to ${REDACTED} failed`);
  });
});

describe('a sensitive value a provider echoes in another spelling', () => {
  // HubSpot's "Property values were not valid: [...]" holds JSON inside its message; an adapter that keeps a raw
  // body keeps JSON text; a Python provider escapes every non-ASCII letter (json.dumps).
  const NOTE = 'Call "Zoë" back\nabout the biopsy';
  const r = createRedactor({}, ['properties']).withValuesFrom({ properties: { hs_note_body: NOTE } });

  it('is blanked when quoted JSON-escaped, twice escaped, or with \\u escapes', () => {
    const inner = JSON.stringify([{ isValid: false, message: `${NOTE} is too long`, name: 'hs_note_body' }]);
    const message = `Property values were not valid: ${inner}`;
    for (const text of [message, JSON.stringify({ message }), inner.replace(/ë/g, '\\u00eb')]) {
      const out = r.text(text);
      expect(out, text).toContain(REDACTED);
      expect(out, text).not.toContain('biopsy');
    }
  });

  it('is blanked as far as it goes when a clip (…) cut it short, and nothing else is', () => {
    const message = `Property values were not valid: [{"message":"Call \\"Zo…`;
    expect(r.text(message)).toBe(`Property values were not valid: [{"message":"${REDACTED}…`);
    expect(r.text(`${NOTE.slice(0, 12)}… and more`)).toBe(`${REDACTED}… and more`);
    expect(r.text('nothing of it here…')).toBe('nothing of it here…');
  });
});

describe('a credential or an email address that a message clip (…) cut short', () => {
  // Adapters shorten a provider's message before the runner sees it: what is left of a detected value no longer
  // has the detected shape (an address without its domain's dot, user-info without its @, a token without its end).
  it('is blanked as far as it goes; a clip elsewhere changes nothing', () => {
    const r = createRedactor();
    const samples: [string, string][] = [
      ['Email address jane.roe@acme-hea… is invalid', `Email address ${REDACTED}… is invalid`],
      ['cannot reach postgres://app:hunter2@db.inte…', 'cannot reach postgres://[redacted]@db.inte…'],
      ['cannot reach https://app:hunter2…', `cannot reach https://${REDACTED}…`],
      ['session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqYW5l…', `session ${REDACTED}…`],
      ['see https://api.example.test/v1/orders/12…', 'see https://api.example.test/v1/orders/12…'],
      ['order ord_1234 of cus_9 fail…', 'order ord_1234 of cus_9 fail…'],
      ['key re_dZZbxz2e_PgDV7jYu3y… is invalid', `key ${REDACTED}… is invalid`],
      ['key AIzaSyD3x9Qm4Lk2R…', `key ${REDACTED}…`],
      ['token ghp_R8f2kL…', `token ${REDACTED}…`],
      ['token xoxb-736011…', `token ${REDACTED}…`],
      ['key sk-proj-Qm4…', `key ${REDACTED}…`],
      ['token pat-na1-3f9a2c…', `token ${REDACTED}…`],
      ['key sk_live_51Q…', `key ${REDACTED}…`],
      ['sent as Basic dXNlcj…', `sent as ${REDACTED}…`],
      ['the store_… and pre_… stay', 'the store_… and pre_… stay'],
    ];
    for (const [input, expected] of samples) expect(r.text(input), input).toBe(expected);
  });
});

describe('the credentials each shipped adapter and an HTTP API use, bare in free text', () => {
  // What a provider's error body, an SDK's message or a caller's own text may quote: each is blanked whole, and the
  // text around it stays readable.
  it("blanks a Resend key, a webhook URL's token, a SAS signature and the credential after an Authorization scheme", () => {
    const r = createRedactor();
    const samples: [string, string][] = [
      ['key re_dZZbxz2e_PgDV7jYu3yT8BKwbE5B2wxPQ is invalid', `key ${REDACTED} is invalid`],
      [
        'POST https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/q8wT3xZ7pL2mN9vB4kR6yH1s failed',
        `POST https://hooks.slack.com/services/${REDACTED} failed`,
      ],
      [
        'https://discord.com/api/webhooks/1234567890123456789/AbCdEfGhIjKlMnOp-QrStUvWxYz_0123456789',
        `https://discord.com/api/webhooks/${REDACTED}`,
      ],
      [
        'to https://acme.webhook.office.com/webhookb2/1b2c@7d8e/IncomingWebhook/a1b2c3d4/e5f6a7b8 (400)',
        `to https://acme.webhook.office.com/webhookb2/${REDACTED} (400)`,
      ],
      ['https://hooks.zapier.com/hooks/catch/123456/ab12cd3/', `https://hooks.zapier.com/hooks/catch/${REDACTED}`],
      [
        'status at https://acct.blob.core.windows.net/out/r.json?sv=2022-11-02&sp=r&sig=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA%3D',
        `status at https://acct.blob.core.windows.net/out/r.json?sv=2022-11-02&sp=r&sig=${REDACTED}`,
      ],
      [
        'POST https://acme-fn.azurewebsites.net/api/orders?code=aBcD3fGh1jKlMn0pQ== timed out',
        `POST https://acme-fn.azurewebsites.net/api/orders?code=${REDACTED} timed out`,
      ],
      ['Authorization: token 0123456789abcdef0123456789abcdef01234567', `Authorization: ${REDACTED}`],
      ['authorization: Bot MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs', `authorization: ${REDACTED}`],
    ];
    expectBlanked(r, samples);
    for (const s of [
      're_send_all_pending',
      'https://api.slack.com/methods/chat.postMessage',
      'https://api.github.com/repos/acme/app/hooks/12345',
      'the password was wrong for user 42',
    ])
      expect(r.text(s), s).toBe(s);
  });
});

describe('a credential or an address spelled as a URL or a JSON string holds it', () => {
  // A provider's error may echo the request: its URL (percent-escaped) or its body inside a JSON string (escaped).
  it('is blanked percent-escaped, twice escaped, or JSON-escaped, and the text around it stays readable', () => {
    const r = createRedactor();
    // Each text as a provider may echo it, and what it reads as.
    const echoed: Record<string, string> = {
      'GET /users?filter=email%20eq%20%27jane.doe%40example.test%27': "GET /users?filter=email eq '[redacted]'",
      'POST /v1/x?q=password%3Dhunter2secret failed': 'POST /v1/x?q=password=[redacted] failed',
      'next=https%3A%2F%2Fapp%3Ahunter2pw%40db.internal%2Fx': 'next=https://[redacted]@db.internal/x',
      'h=Authorization%253A%2520Bearer%2520abcdef0123456789': 'h=Authorization: [redacted]',
      'body: {\\"password\\":\\"hunter2secret\\",\\"to\\":\\"x\\"}': 'body: {"password":"[redacted]","to":"x"}',
      '{"detail":"{\\"apiKey\\": \\"k3y-v4lue\\"}"}': '{"detail":"{"apiKey": "[redacted]"}"}',
      'to jane\\u0040example.test': 'to [redacted]',
    };
    expectBlanked(r, Object.entries(echoed));
    const declared = createRedactor({ fields: ['memberNo'] }).withValuesFrom({ memberNo: 'M 1234/77' });
    expect(declared.text('GET /members/M%201234%2F77 404')).toBe('GET /members/[redacted] 404');
    // Escapes with nothing behind them are left as they are.
    for (const s of ['GET /search?q=caf%C3%A9%20menu 404', '{"message":"field \\"to\\" is required"}', '100%'])
      expect(r.text(s), s).toBe(s);
  });
});

describe('ordinary words are not credentials: a packet stays readable', () => {
  it('leaves a word after Basic, and an error code naming a credential, as they are', () => {
    const r = createRedactor();
    for (const s of [
      'The price for the Basic Options plan is not active',
      'Upgrade from Basic Online to Pro',
      'Basic Order, Basic Overview',
      'invalid_auth: not a refusal Slack documents for this method; it may have been applied',
      'token_revoked: not a refusal Slack documents for this method',
      'missing_token: send one',
    ])
      expect(r.text(s), s).toBe(s);
    // A credential after them still is blanked.
    expect(r.text('Authorization: Basic dXNlcjpwxIFzcw==')).toBe('Authorization: [redacted]');
    expect(r.text('sent Basic dXNlcjpwxIFzcw== to the proxy')).toBe(`sent ${REDACTED} to the proxy`);
    expect(r.text('invalid_token: sk_live_51Hq9ZsEcReTvAlUe0xyz')).toBe(`invalid_token: ${REDACTED}`);
  });

  it("blanks HubSpot's compound personal-data properties (mobilephone, fax) like phone", () => {
    const r = createRedactor();
    expect(
      r.params({ properties: { mobilephone: '+44 7700 900123', fax: '+44 20 7946 0000', city: 'Leeds' } }),
    ).toEqual({
      properties: { mobilephone: REDACTED, fax: REDACTED, city: 'Leeds' },
    });
  });
});

describe('a card number however its groups are spaced', () => {
  it('is blanked with double spaces, a no-break space, " - " or "+" between groups; the last four alone stay', () => {
    const r = createRedactor();
    for (const pan of [
      '4242  4242  4242  4242',
      '4242 - 4242 - 4242 - 4242',
      '4242\u00a04242\u00a04242\u00a04242',
      '4242\t4242\t4242\t4242',
      '4242+4242+4242+4242',
      '3782\u202f822463\u202f10005',
    ]) {
      expect(r.text(`card ${pan} declined`), pan).toBe(`card ${REDACTED} declined`);
      expect(r.params({ card: { number: pan } }), pan).toEqual({ card: { number: REDACTED } });
    }
    expect(r.text('card ending in 4242 (last4 4242), amounts 1000  2000  3000  4000')).toBe(
      'card ending in 4242 (last4 4242), amounts 1000  2000  3000  4000',
    );
  });
});

describe('a card number beside other digits', () => {
  it('is blanked when its expiry, CVC or a quantity follows or precedes it, and the other digits stay', () => {
    const r = createRedactor();
    const samples: [string, string][] = [
      ['4242 4242 4242 4242 12/30', `${REDACTED} 12/30`],
      ['pan 4242424242424242 123', `pan ${REDACTED} 123`],
      ['qty 3 4242424242424242', `qty 3 ${REDACTED}`],
      ['4242424242424242 5555555555554444', `${REDACTED} ${REDACTED}`],
      ['4242 4242 4242 4242 12.50 EUR', `${REDACTED} 12.50 EUR`],
    ];
    for (const [input, expected] of samples) expect(r.text(input), input).toBe(expected);
  });
});

describe('an email address with letters outside ASCII', () => {
  it('is blanked whole: an accented name, an internationalised domain', () => {
    const r = createRedactor();
    for (const address of ['josé.núñez@correo.es', 'müller@example.com', '田中@例え.jp', 'jürgen@bücher.de'])
      expect(r.text(`to ${address}, cc none`), address).toBe(`to ${REDACTED}, cc none`);
    for (const s of ['mention @here', 'npm i pkg@1.2.3', 'user@localhost']) expect(r.text(s), s).toBe(s);
  });
});

describe('a value named by its sibling ({ name, value } pairs)', () => {
  // Headers as lists (Graph's internetMessageHeaders, a captured request) and HubSpot's form fields name their value.
  it('is blanked when the name is secret or personal, in params and, echoed, in text', () => {
    const r = createRedactor();
    const params = {
      internetMessageHeaders: [
        { name: 'X-Api-Key', value: 'k3y-0f-the-api' },
        { name: 'X-Campaign', value: 'spring' },
      ],
      fields: [
        { name: 'phone', value: '+44 7700 900123' },
        { property: 'mobilephone', value: '+44 7700 900124' },
        { key: 'Cookie', value: 'sid=s3ss10n' },
        { name: 'company', value: 'Acme' },
      ],
    };
    expect(r.params(params)).toEqual({
      internetMessageHeaders: [
        { name: 'X-Api-Key', value: REDACTED },
        { name: 'X-Campaign', value: 'spring' },
      ],
      fields: [
        { name: 'phone', value: REDACTED },
        { property: 'mobilephone', value: REDACTED },
        { key: 'Cookie', value: REDACTED },
        { name: 'company', value: 'Acme' },
      ],
    });
    expect(r.withValuesFrom(params).text('invalid value +44 7700 900123 for phone; header k3y-0f-the-api')).toBe(
      `invalid value ${REDACTED} for phone; header ${REDACTED}`,
    );
  });
});

describe('a word after Bearer', () => {
  it("is prose when it is a short lowercase word, as in Stripe's own message; a token after it still is blanked", () => {
    const r = createRedactor();
    const stripe =
      "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').";
    expect(r.text(stripe)).toBe(
      "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: [redacted]').",
    );
    expect(r.text('the bearer token was rejected')).toBe('the bearer token was rejected');
    for (const token of ['abcdefghijklmnopqrstu', 'Abcdefgh', 'abc123def', 'abc.def-ghi'])
      expect(r.text(`sent Bearer ${token} upstream`), token).toBe(`sent ${REDACTED} upstream`);
  });
});

describe('every GitHub and Slack token prefix their pages list', () => {
  // github.blog/changelog/2021-03-31-authentication-token-format-updates-are-generally-available (ghr_ refresh
  // tokens); docs.slack.dev/authentication/tokens (app-level xapp-) and tooling.tokens.rotate (xoxe- refresh tokens).
  it('blanks a GitHub refresh token and a Slack app-level or refresh token, whole or clipped', () => {
    const r = createRedactor();
    for (const token of [
      'ghr_1B4a2e77838347a7E420ce178F2E7c6912E169246c34E1ccbF66C46812d16D5B1A9Dc86A1498',
      'xapp-1-A0123456789-1234567890123-0123456789abcdef0123456789abcdef',
      'xoxe-1-My0xLTEyMzQ1Njc4OTAtMTIzNDU2Nzg5MDEyMy1hYmNkZWY',
    ]) {
      expect(r.text(`token ${token} revoked`), token).toBe(`token ${REDACTED} revoked`);
      expect(r.text(`token ${token.slice(0, 12)}…`), token).toBe(`token ${REDACTED}…`);
    }
  });
});

describe('a provider error that echoes the request as it was sent', () => {
  // A form-encoded body (Stripe's, HubSpot's forms) names nested fields in brackets; a card number or an IBAN after a
  // secret-named key may be grouped by four; a Cookie header holds every cookie after it.
  const body =
    'amount=500&cardNumber=4000 0566 5566 5556&card[cvc]=913&metadata[password]=hunter2&sepa_debit[iban]=DE89370400440532013000&headers["X-Api-Key"]: k_5f0c2a9e71';
  it('leaves no secret-named value and no IBAN in a handoff packet, receipts or logs; the rest stays', async () => {
    const logs: LogEntry[] = [];
    const { provider, adapter, runner, ledger, packets } = setup({}, { logger: (e) => logs.push(e) });
    provider.failNext({
      kind: 'rejected',
      message: `invalid request ${body}; pay to iban: GB33 BUKB 2020 1555 5555 55\nCookie: theme=dark; sid=8c1f0e9b2a7d44c1`,
    });
    const b = await runner.run(adapter, 'records.create', { params: { ref: 'r-10' } });
    expect(b.status).toBe('handed-off');
    const everything = [JSON.stringify(packets), await exportReceiptsJsonl(ledger), JSON.stringify(logs)].join('\n');
    expect(everything).toContain('invalid request amount=500&cardNumber=[redacted]&card[cvc]=[redacted]&metadata');
    expect(everything).toContain('Cookie: [redacted]');
    for (const piece of [
      '8c1f0e9b2a7d44c1',
      '0566 5566',
      'cvc]=913',
      'hunter2',
      'DE89',
      '0532013000',
      'k_5f0c2a9e71',
      'BUKB',
      '5555 55',
    ])
      expect(everything).not.toContain(piece);
  });
});

describe('a known value inside a longer run of letters or digits', () => {
  // A provider's message repeats the request's values; blanked inside other words and numbers, they changed what a
  // person reads ("1[redacted] per hour" for a known 500).
  const r = createRedactor({ fields: ['limit', 'id', 'big', 'name', 'tag', 'city', 'recipient'] }).withValuesFrom({
    limit: '500',
    id: 123,
    big: '12345678',
    name: 'Ann Lee',
    tag: '(vip)',
    city: 'Zoë',
    recipient: '山田太郎',
    password: 'hunter2secret',
  });

  it('a short value or a number is blanked where it stands whole, never inside another number or word', () => {
    const samples: [string, string][] = [
      ['quota 1500 per hour, 5000 a day', 'quota 1500 per hour, 5000 a day'],
      ['order 500 failed', `order ${REDACTED} failed`],
      ['id=500, limit', `id=${REDACTED}, limit`],
      ['ids 1230, 4123, 123.', `ids 1230, 4123, ${REDACTED}.`],
      ['ref 912345678 or 12345678', `ref 912345678 or ${REDACTED}`],
      ['to Ann Lee, not Ann Leeds', `to ${REDACTED}, not Ann Leeds`],
      ['for Zoë; Zoëlle and MZoë stay', `for ${REDACTED}; Zoëlle and MZoë stay`],
      [
        `for ${'Zoë'.normalize('NFD')}, ${'Zoëlle'.normalize('NFD')} stays`,
        `for ${REDACTED}, ${'Zoëlle'.normalize('NFD')} stays`,
      ],
      ['tier x(vip)y', `tier x${REDACTED}y`],
      ['顧客山田太郎様の注文', `顧客${REDACTED}様の注文`],
      ['ref 9912345… and 123456…', `ref 9912345… and ${REDACTED}…`],
    ];
    for (const [input, expected] of samples) expect(r.text(input), input).toBe(expected);
  });

  it('in a script written without spaces between words, a known value is blanked inside the run it stands in', () => {
    // Lao, Khmer, Myanmar, Tibetan, Javanese, Balinese, Tai Tham, Yi: a name between other words of the sentence.
    const names = ['ສົມໃຈ', 'សុខា', 'အောင်', 'བཀྲ', 'ꦱꦸꦠ', 'ᬫᬤᬾ', 'ᨣᩤᨾ', 'ꆈꌠꁱ'];
    const s = createRedactor({ fields: ['name'] });
    for (const name of names) {
      const [a, b] = [[...name].at(-1)!, [...name][0]!];
      expect(s.withValuesFrom({ name }).text(`${a}${a}${name}${b}${b}`), name).toBe(`${a}${a}${REDACTED}${b}${b}`);
    }
  });

  it("a long value that is not a number (a password, a token) is blanked wherever it stands: it is the secret's text", () => {
    expect(r.text('login xhunter2secret2 refused')).toBe(`login x${REDACTED}2 refused`);
  });
});

describe('a token that is not a credential', () => {
  it('a progress token or a page cursor stays; an access, refresh, id, session or AWS security token is blanked', () => {
    const r = createRedactor();
    for (const s of [
      'notifications/progress {"progressToken":17,"progress":3}',
      'page_token=2 is past the end',
      '{"nextPageToken":"CiAKGjBp"}',
      'progress_token: 5',
    ])
      expect(r.text(s), s).toBe(s);
    const cursors = { progressToken: 17, pageToken: 'CiAKGjBp', next_page_token: 'x2' };
    expect(r.params(cursors)).toBe(cursors);
    for (const key of ['access_token', 'refresh_token', 'id_token', 'x-amz-security-token', 'sessionToken', 'token'])
      expect(r.text(`${key}=abc123def rejected`), key).toBe(`${key}=${REDACTED} rejected`);
    expect(r.params({ access_token: 'a', csrfToken: 'b' })).toEqual({ access_token: REDACTED, csrfToken: REDACTED });
  });
});

import { schemaErrors } from '@retrysafe/contract/provider';
import { paramsErrors } from '@retrysafe/core/internal';
import { describe, expect, it } from 'vitest';
import { createMsGraphAdapter } from '../src/msgraph-adapter.js';
import { eventParams, mailParams, taskParams } from './helpers.js';

// The params schema is the one definition of what each Graph operation accepts: the runner refuses
// these before the claim, the frame on every attempt. One row per rule the adapter used to hand-check.
// The operations as the runner gets them from the adapter (nothing is sent: no call is made).
const operations = createMsGraphAdapter({ accessToken: 'test-token', baseUrl: 'http://127.0.0.1:9/' }).operations;
const mail = mailParams(1);
const event = eventParams(1);
const task = taskParams(1);
const cases: [operation: string, why: string, params: unknown][] = [
  ['mail.send', 'params not an object', 'hello'],
  ['mail.send', 'mailbox empty', { ...mail, mailbox: '' }],
  ['mail.send', 'mailbox with a path', { ...mail, mailbox: 'me/messages' }],
  ['mail.send', 'mailbox with a space', { ...mail, mailbox: 'a b' }],
  ['mail.send', 'subject not a string', { ...mail, message: { ...mail.message, subject: 1 } }],
  ['mail.send', 'body missing', { ...mail, message: { ...mail.message, body: undefined } }],
  [
    'mail.send',
    'body of another type',
    { ...mail, message: { ...mail.message, body: { contentType: 'rtf', content: 'x' } } },
  ],
  ['mail.send', 'no recipients', { ...mail, message: { ...mail.message, toRecipients: [] } }],
  [
    'mail.send',
    'a recipient without an address',
    { ...mail, message: { ...mail.message, toRecipients: [{ emailAddress: { address: ' ' } }] } },
  ],
  ['mail.send', 'cc not an array', { ...mail, message: { ...mail.message, ccRecipients: 'a@example.test' } }],
  ['mail.send', 'saveToSentItems set', { ...mail, saveToSentItems: true }],
  [
    'mail.send',
    'importance beyond ASCII letters (a case fold would read hıgh as high)',
    { ...mail, message: { ...mail.message, importance: 'h\u0131gh' } },
  ],
  ['events.create', 'blank subject', { ...event, event: { ...event.event, subject: '  ' } }],
  ['events.create', 'a caller-set transactionId', { ...event, event: { ...event.event, transactionId: 'mine' } }],
  [
    'events.create',
    'start without a time zone',
    { ...event, event: { ...event.event, start: { dateTime: '2026-12-01T10:00:00' } } },
  ],
  ['events.create', 'blank end time', { ...event, event: { ...event.event, end: { dateTime: '', timeZone: 'UTC' } } }],
  // Graph's one spelling of a time, {date}T{time} with its zone in timeZone: another spelling of one slot would be
  // another operation id, and a second event.
  ...(['2026-12-01T10:00', '2026-12-01T10:00:00Z', '2026-12-01T10:00:00+01:00', '2026-12-01 10:00:00'] as const).map(
    (dateTime): [string, string, unknown] => [
      'events.create',
      `start spelled ${dateTime}`,
      { ...event, event: { ...event.event, start: { dateTime, timeZone: 'UTC' } } },
    ],
  ),
  [
    'todo.tasks.create',
    'due date a date alone',
    { ...task, task: { ...task.task, dueDateTime: { dateTime: '2026-12-01', timeZone: 'UTC' } } },
  ],
  ['todo.tasks.create', 'list id with a path', { ...task, listId: 'a/b' }],
  ['mail.send', 'mailbox a dot segment (the URL would resolve to /v1.0/sendMail)', { ...mail, mailbox: '..' }],
  ['events.create', 'mailbox a dot segment', { ...event, mailbox: '.' }],
  ['todo.tasks.create', 'list id a dot segment', { ...task, listId: '..' }],
  ['todo.tasks.create', 'blank title', { ...task, task: { title: ' ' } }],
  [
    'todo.tasks.create',
    'due date without a time zone',
    { ...task, task: { ...task.task, dueDateTime: { dateTime: '2026-12-01' } } },
  ],
];

describe('Graph params schemas', () => {
  it.each([
    ['mail.send', mail],
    ['events.create', event],
    ['todo.tasks.create', task],
  ] as const)('%s accepts valid params', (name, params) => {
    const op = operations[name]!;
    expect(paramsErrors(op, params)).toEqual([]);
    expect(schemaErrors(op.paramsSchema, params)).toEqual([]);
  });
  it.each(cases)('%s refuses: %s', (name, _why, params) => {
    const op = operations[name]!;
    const clean = JSON.parse(JSON.stringify(params)) as unknown;
    expect(paramsErrors(op, clean)).not.toEqual([]);
    expect(schemaErrors(op.paramsSchema, clean)).not.toEqual([]);
  });
});

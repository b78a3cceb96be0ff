// The params and results a user types against. No import of the SDK here: this file is in the published
// declarations, and the resend SDK's own ones import `react`, which a TypeScript user without it cannot check.

/** One email as this adapter accepts it: the fields of Resend's send-email body it passes on. */
export interface EmailFields {
  readonly from: string;
  readonly to: string | readonly string[];
  readonly subject: string;
  readonly html?: string;
  readonly text?: string;
  readonly cc?: string | readonly string[];
  readonly bcc?: string | readonly string[];
  readonly replyTo?: string | readonly string[];
  readonly headers?: Readonly<Record<string, string>>;
}

export interface EmailsSendParams extends EmailFields {
  /** Your own name for this email (e.g. `welcome-user/123`): the business-operation id is derived from it. */
  readonly emailRef: string;
}

export interface BatchSendParams {
  /** Your own name for the whole batch (e.g. `invoices-2026-12/team-7`). */
  readonly batchRef: string;
  readonly emails: readonly EmailFields[];
}

export interface EmailsSendResult {
  readonly id: string;
}
export interface BatchSendResult {
  readonly ids: readonly string[];
}

/** Each Resend operation's params and what a `done` result holds (runner.run checks a call against them). */
export type ResendOperationTypes = {
  readonly 'emails.send': { readonly params: EmailsSendParams; readonly result: EmailsSendResult };
  readonly 'batch.send': { readonly params: BatchSendParams; readonly result: BatchSendResult };
};

import { randomUUID } from 'node:crypto';

/**
 * HubSpot's error bodies, as the sandbox sends them. Shape `{ status: 'error', message,
 * correlationId, category, errors? }` (https://developers.hubspot.com/docs/api/error-handling);
 * the 409 is the documented contact-email collision body
 * (`Contact already exists. Existing ID: N`, category `CONFLICT`); 429 bodies carry `policyName`
 * and `errorType` (https://developers.hubspot.com/docs/api/usage-details).
 */
export interface HubSpotErrorBody {
  readonly status: 'error';
  readonly message: string;
  readonly correlationId: string;
  readonly category?: string;
  readonly errors?: readonly Record<string, unknown>[];
  readonly policyName?: string;
  readonly errorType?: string;
  readonly links?: Record<string, string>;
}

export type RateLimitPolicy = 'TEN_SECONDLY_ROLLING' | 'SECONDLY' | 'DAILY';

export function errorBody(category: string, message: string, extra: Partial<HubSpotErrorBody> = {}): HubSpotErrorBody {
  return { status: 'error', message, correlationId: randomUUID(), category, ...extra };
}

export function authenticationError(): HubSpotErrorBody {
  return errorBody(
    'INVALID_AUTHENTICATION',
    'Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview',
  );
}

export function missingScopesError(scope: string): HubSpotErrorBody {
  return errorBody(
    'MISSING_SCOPES',
    "This app hasn't been granted all required scopes to make this call. Read more about required scopes here: https://developers.hubspot.com/scopes.",
    {
      errors: [
        { message: 'One or more of the following scopes are required.', context: { requiredGranularScopes: [scope] } },
      ],
      links: { scopes: 'https://developers.hubspot.com/scopes' },
    },
  );
}

export function notFoundError(): HubSpotErrorBody {
  return errorBody('OBJECT_NOT_FOUND', 'resource not found');
}

export interface PropertyProblem {
  readonly name: string;
  readonly error: string;
  readonly message: string;
}

/** `Property values were not valid: [...]` — the list is JSON inside the message, as HubSpot sends it. */
export function propertyValidationError(problems: readonly PropertyProblem[]): HubSpotErrorBody {
  const list = problems.map((p) => ({
    isValid: false,
    message: p.message,
    error: p.error,
    name: p.name,
    localizedErrorMessage: p.message,
  }));
  return errorBody('VALIDATION_ERROR', `Property values were not valid: ${JSON.stringify(list)}`);
}

export function validationError(message: string): HubSpotErrorBody {
  return errorBody('VALIDATION_ERROR', message);
}

/** The documented duplicate shape; for tickets and custom objects HubSpot's exact status is unverified (docs/evidence/hubspot.md). */
export function conflictError(label: string, existingId: string): HubSpotErrorBody {
  return errorBody('CONFLICT', `${label} already exists. Existing ID: ${existingId}`);
}

export function rateLimitError(policy: RateLimitPolicy): HubSpotErrorBody {
  const message =
    policy === 'SECONDLY'
      ? 'You have reached your secondly limit.'
      : policy === 'DAILY'
        ? 'You have reached your daily limit.'
        : 'You have reached your ten_secondly_rolling limit.';
  return { status: 'error', message, errorType: 'RATE_LIMIT', correlationId: randomUUID(), policyName: policy };
}

export function serverError(status: number): HubSpotErrorBody {
  return errorBody('INTERNAL_ERROR', status === 503 ? 'Service temporarily unavailable' : 'internal error');
}

import { typeTestSuite } from '../../../packages/contract/src/__fixtures__/type-test.js';

// Runs tsc on test/run-types.test-d.ts (the typed runner.run with the Stripe adapter).
typeTestSuite(import.meta.url, {
  file: 'test/run-types.test-d.ts',
  title: 'typed runner.run',
  compiles: 'the right calls compile and every @ts-expect-error is a real error',
  withoutDirectives:
    'without the directives, each wrong call is an error of its own (name, missing intent field, param type, …)',
  errors: 6,
  mentions: [/"paymentIntent\.create"/, /orderRef/],
});

import { typeTestSuite } from './__fixtures__/type-test.js';

typeTestSuite(import.meta.url, {
  file: 'src/ids.test-d.ts',
  title: 'branded id types',
  compiles: 'mixing up ids fails to compile (every @ts-expect-error is a real error)',
  withoutDirectives: 'the same file without the expect-error directives does not compile',
  errors: 8,
});

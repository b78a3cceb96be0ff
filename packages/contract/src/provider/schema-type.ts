/** The type of a params JSON Schema written `as const`, so an operation's params are declared once. */
export type SchemaType<S> = S extends { readonly enum: readonly (infer E)[] }
  ? E
  : S extends { readonly not: object }
    ? never
    : S extends { readonly type: 'integer' | 'number' }
      ? number
      : S extends { readonly type: 'boolean' }
        ? boolean
        : S extends { readonly type: 'string' }
          ? string
          : S extends { readonly type: 'array' }
            ? readonly (S extends { readonly items: infer I } ? SchemaType<I> : unknown)[]
            : S extends { readonly properties: infer P; readonly required: readonly (infer R)[] }
              ? { readonly [K in keyof P as K extends R ? K : never]: SchemaType<P[K]> } & {
                  readonly [K in keyof P as K extends R ? never : K]?: SchemaType<P[K]>;
                } & { readonly [field: string]: unknown }
              : unknown;

// ESLint here lints schema.graphql only (`make lint-specs`); TypeScript is Biome's.
import graphqlPlugin from '@graphql-eslint/eslint-plugin'

export default [
  {
    files: ['schema.graphql'],
    languageOptions: {
      parser: graphqlPlugin.parser,
      parserOptions: { graphQLConfig: { schema: './schema.graphql' } },
    },
    plugins: { '@graphql-eslint': graphqlPlugin },
    rules: {
      ...graphqlPlugin.configs['flat/schema-recommended'].rules,
      // Our descriptions are one line each, which read best inline.
      '@graphql-eslint/description-style': ['error', { style: 'inline' }],
      // Values that live only inside their parent, with no identity of their own.
      '@graphql-eslint/strict-id-in-types': [
        'error',
        {
          acceptedIdNames: ['id'],
          acceptedIdTypes: ['ID'],
          exceptions: { types: ['OrderItem', 'UserStatus', 'Metrics'] },
        },
      ],
    },
  },
]

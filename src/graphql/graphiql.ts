import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { FastifyInstance } from 'fastify'

const require = createRequire(import.meta.url)
/** A file of an installed package, whatever its `exports` allow. */
const packageFile = (name: string, path: string) =>
  join(dirname(require.resolve(`${name}/package.json`)), path)

// GraphiQL and React from our own node_modules: the IDE works with no network beyond
// this server (Mercurius's page fetches them from unpkg.com).
const ASSETS: Record<string, { file: string; type: string }> = {
  'react.js': {
    file: packageFile('react', 'umd/react.production.min.js'),
    type: 'text/javascript',
  },
  'react-dom.js': {
    file: packageFile('react-dom', 'umd/react-dom.production.min.js'),
    type: 'text/javascript',
  },
  'graphiql.js': { file: packageFile('graphiql', 'graphiql.min.js'), type: 'text/javascript' },
  'graphiql.css': { file: packageFile('graphiql', 'graphiql.min.css'), type: 'text/css' },
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>GraphiQL</title>
  <link rel="stylesheet" href="/graphiql/assets/graphiql.css">
  <style>body { margin: 0; } #graphiql { height: 100vh; }</style>
</head>
<body>
  <div id="graphiql">Loading…</div>
  <script src="/graphiql/assets/react.js"></script>
  <script src="/graphiql/assets/react-dom.js"></script>
  <script src="/graphiql/assets/graphiql.js"></script>
  <script src="/graphiql/assets/start.js"></script>
</body>
</html>`

/** What a first visit finds in the editor: this service's chat, rather than GraphiQL's welcome text. */
export const DEFAULT_QUERY = `# The live chat. Open this page in two browser tabs: run Watch in the first (the run
# button asks which operation), then Send in the second; the message appears in the first.
# History lists what the chat holds so far.

subscription Watch {
  messageAdded(chatId: "demo") {
    text
    author
    createdAt
  }
}

mutation Send {
  sendMessage(text: "hi", author: "me", chatId: "demo") {
    id
  }
}

query History {
  messages(chatId: "demo", limit: 10) {
    text
    author
    createdAt
  }
}
`

// Queries and mutations over HTTP, subscriptions over graphql-transport-ws, same path.
const START = `const url = new URL('/graphql', location.href)
const subscriptionUrl = url.href.replace(/^http/, 'ws')
const fetcher = GraphiQL.createFetcher({ url: url.href, subscriptionUrl })
const defaultQuery = ${JSON.stringify(DEFAULT_QUERY)}
ReactDOM.createRoot(document.getElementById('graphiql'))
  .render(React.createElement(GraphiQL, { fetcher, defaultQuery, shouldPersistHeaders: true }))`

/** GraphiQL at /graphiql, for development. */
export async function graphiqlPlugin(app: FastifyInstance) {
  const assets = new Map(
    Object.entries(ASSETS).map(([name, { file, type }]) => [
      name,
      { body: readFileSync(file), type },
    ]),
  )
  assets.set('start.js', { body: Buffer.from(START), type: 'text/javascript' })

  app.get('/graphiql', async (_request, reply) => reply.type('text/html').send(PAGE))
  app.get<{ Params: { name: string } }>('/graphiql/assets/:name', async (request, reply) => {
    const asset = assets.get(request.params.name)
    if (!asset) return reply.callNotFound()
    return reply.type(asset.type).header('cache-control', 'public, max-age=86400').send(asset.body)
  })
}

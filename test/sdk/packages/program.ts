// A client team's program, written only against the two SDK packages as npm installs them
// (test/sdk-packages.test.ts compiles it with tsc --strict in an empty project and runs it):
// node program.js <baseUrl> <admin email> <admin password>. It prints one JSON line.
import {
  createGraphqlClient,
  GraphqlResponseError,
  specVersion as graphqlVersion,
  MeDocument,
  MessageAddedDocument,
  MessagesDocument,
  OrderDocument,
  SendMessageDocument,
} from '@catalog-chat/graphql-client'
import { createRestClient, specVersion as restVersion } from '@catalog-chat/rest-client'

const [baseUrl = '', adminEmail = '', adminPassword = ''] = process.argv.slice(2)
const email = `sdk-package-${Date.now()}@example.com`
const password = 'sdk-password-1'

async function rest() {
  const api = createRestClient({ baseUrl })
  const signUp = await api.POST('/users', { body: { name: 'Package user', email, password } })
  const login = await api.POST('/auth/login', { body: { email, password } })
  if (!login.data) throw new Error(`login failed: ${JSON.stringify(login.error)}`)
  const listed = await api.GET('/products', { params: { query: { limit: 5 } } })

  let adminToken: string | undefined
  const admin = createRestClient({ baseUrl, token: () => adminToken })
  const adminLogin = await admin.POST('/auth/login', {
    body: { email: adminEmail, password: adminPassword },
  })
  adminToken = adminLogin.data?.data.accessToken
  const created = await admin.POST('/products', {
    body: { name: 'Packaged lamp', price: 19.5, category: 'sdk-package', stock: 3 },
  })
  if (!created.data) throw new Error(`create failed: ${JSON.stringify(created.error)}`)
  const { id } = created.data.data
  const read = await api.GET('/products/{id}', { params: { path: { id } } })
  const readV2 = await createRestClient({ baseUrl, apiVersion: 2 }).GET('/products/{id}', {
    params: { path: { id } },
  })
  return {
    accessToken: login.data.data.accessToken,
    summary: {
      version: restVersion,
      signedUp: signUp.data?.data.email === email,
      listed: Array.isArray(listed.data?.data),
      created: created.response.status,
      etag: read.response.headers.get('etag'),
      readName: read.data?.data.name,
      v2AnsweredBy: readV2.response.headers.get('api-version'),
      v2RequestId: readV2.data?.meta.requestId === readV2.response.headers.get('x-request-id'),
    },
  }
}

const pause = (ms: number) => new Promise<undefined>((resolve) => setTimeout(resolve, ms))

async function graphql(token: string) {
  const client = createGraphqlClient({ url: `${baseUrl}/graphql`, token })
  const chatId = `sdk-package-${Date.now()}`
  const { me } = await client.request(MeDocument)
  const live = client.subscribe(MessageAddedDocument, { chatId })
  const firstEvent = live.next()
  // The server starts the subscription a moment after the socket opens: send until one arrives.
  const sentIds: string[] = []
  let event: Awaited<typeof firstEvent> | undefined
  while (!event && sentIds.length < 50) {
    const text = `packaged hello ${sentIds.length + 1}`
    const { sendMessage } = await client.request(SendMessageDocument, {
      text,
      author: 'sdk',
      chatId,
    })
    sentIds.push(sendMessage.id)
    event = await Promise.race([firstEvent, pause(200)])
  }
  await live.return()
  const { messages } = await client.request(MessagesDocument, { chatId })
  const refused = await client.request(OrderDocument, { id: '987654321' }).catch((error) => error)
  await client.dispose()
  const received = event?.done === false ? event.value.messageAdded : undefined
  return {
    version: graphqlVersion,
    me: me?.email === email,
    liveText: received?.text,
    liveWasSent: received !== undefined && sentIds.includes(received.id),
    listed: messages.length === sentIds.length,
    refusedCode:
      refused instanceof GraphqlResponseError ? refused.errors[0]?.extensions?.code : refused,
  }
}

const { accessToken, summary } = await rest()
console.log(JSON.stringify({ rest: summary, graphql: await graphql(accessToken) }))

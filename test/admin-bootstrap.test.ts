import { eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { users } from '../src/db/schema.js'
import type { Api } from './helpers/api.js'
import { backends, type TestDatabase } from './helpers/backends.js'
import { login, startServer, type TestServer } from './helpers/server.js'

/**
 * The admin that the configuration asks for is made sure of when an instance starts
 * (the users module's start task). Each test restarts the service over one database, as
 * a redeploy does.
 */

const product = { name: 'Desk lamp', price: 19.99, category: 'lighting', stock: 5 }
const noConfiguredAdmin = { ADMIN_EMAIL: '', ADMIN_PASSWORD: '' }

let emailCount = 0
const uniqueEmail = () => {
  emailCount += 1
  return `bootstrap${emailCount}-${Date.now()}@example.com`
}

const refresh = (api: Api, refreshToken: string) =>
  api.post('/auth/refresh', { json: { refreshToken } })

/** A log that a test can read: every line the server wrote at warn or above, parsed. */
function capturedLog() {
  const lines: Record<string, unknown>[] = []
  const logger = {
    level: 'warn',
    stream: { write: (line: string) => lines.push(JSON.parse(line)) },
  }
  return { lines, logger }
}

describe.each(backends)('admin bootstrap on $name', (backend) => {
  let testDatabase: TestDatabase
  beforeAll(async () => {
    testDatabase = await backend.open()
  })
  afterAll(() => testDatabase?.drop())

  /** One instance at a time over the file's database, started with this environment. */
  async function withServer<T>(
    environment: Record<string, string>,
    run: (server: TestServer) => Promise<T>,
  ) {
    const server = await startServer(backend, environment, { testDatabase })
    try {
      return await run(server)
    } finally {
      await server.close()
    }
  }

  const roleOf = async (email: string) => {
    const [row] = await testDatabase.database.db
      .select({ role: users.role })
      .from(users)
      .where(eq(users.email, email))
    return row?.role
  }

  it('promoting an existing account ends its sessions: no refresh into an admin token', async () => {
    const email = uniqueEmail()
    const oldSession = await withServer({}, async ({ api }) => {
      const created = await api.post('/users', {
        json: { name: 'Soon admin', email, password: 'user-password-1' },
      })
      expect(created.status, created.text).toBe(201)
      return login(api, { email, password: 'user-password-1' })
    })

    await withServer(
      { ADMIN_EMAIL: email, ADMIN_PASSWORD: 'admin-password-2' },
      async ({ api }) => {
        expect(await roleOf(email)).toBe('admin')
        expect((await refresh(api, oldSession.refreshToken)).status).toBe(401)
        const oldPassword = await api.post('/auth/login', {
          json: { email, password: 'user-password-1' },
        })
        expect(oldPassword.status).toBe(401)
        const { accessToken } = await login(api, { email, password: 'admin-password-2' })
        const response = await api.post('/products', { json: product, token: accessToken })
        expect(response.status, response.text).toBe(201)
      },
    )
  })

  it('a new ADMIN_PASSWORD ends the sessions of the old one; the same password keeps them', async () => {
    const email = uniqueEmail()
    const first = { ADMIN_EMAIL: email, ADMIN_PASSWORD: 'first-password-1' }
    const session = await withServer(first, ({ api }) =>
      login(api, { email, password: first.ADMIN_PASSWORD }),
    )

    // A restart with the same configuration must not log the admin out.
    const rotated = await withServer(first, async ({ api }) => {
      const response = await refresh(api, session.refreshToken)
      expect(response.status, response.text).toBe(200)
      return response.body.data as { refreshToken: string }
    })

    await withServer(
      { ADMIN_EMAIL: email, ADMIN_PASSWORD: 'second-password-2' },
      async ({ api }) => {
        expect((await refresh(api, rotated.refreshToken)).status).toBe(401)
        await login(api, { email, password: 'second-password-2' })
      },
    )
  })

  it('two instances starting together on an empty database make one admin, whose password is printed once', async () => {
    const empty = await backend.open()
    const logs = [capturedLog(), capturedLog()]
    const servers = await Promise.all(
      logs.map(({ logger }) =>
        startServer(backend, noConfiguredAdmin, { testDatabase: empty, logger }),
      ),
    )
    try {
      const admins = await empty.database.db
        .select({ email: users.email })
        .from(users)
        .where(eq(users.role, 'admin'))
      expect(admins).toEqual([{ email: 'admin@localhost' }])
      const printed = logs.flatMap(({ lines }) => lines.filter((line) => line.password))
      expect(printed).toHaveLength(1)
      const { email, password } = printed[0] as { email: string; password: string }
      // Whichever instance printed it, the password is the one stored: both accept it.
      for (const server of servers) await login(server.api, { email, password })
    } finally {
      for (const server of servers) await server.close()
      await empty.drop()
    }
  })
})

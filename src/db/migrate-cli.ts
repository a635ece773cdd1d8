import { loadConfig } from '../config.js'
import { openDatabase } from './client.js'

// `make migrate`: apply migrations to the configured database without starting the server.
const config = loadConfig(process.env)
const database = await openDatabase(config)
try {
  await database.migrate()
  console.log(`migrations applied (${database.kind})`)
} finally {
  await database.close()
}

import { periodicTask } from '../../platform/periodic-task.js'
import type { Infrastructure } from '../domain-module.js'
import { createUploadHandlers } from './uploads-handlers.js'
import { createUploadsRepository } from './uploads-repository.js'
import { createUploadsService } from './uploads-service.js'

/** An upload still pending after this long lost its writer (an instance that died). */
const ABANDONED_AFTER_MS = 60 * 60 * 1000

/** Uploads: files streamed into the database in chunks, and back out by byte range. */
export function createUploadsModule({
  database,
  config,
  log,
}: Pick<Infrastructure, 'database' | 'config' | 'log'>) {
  const uploads = createUploadsService({
    db: database.db,
    uploads: createUploadsRepository(database.db),
    quotaBytes: config.uploadQuotaBytes,
  })
  const sweeping = periodicTask(
    () =>
      uploads.removeAbandoned(ABANDONED_AFTER_MS).then(
        (removed) => {
          if (removed > 0) log.info({ removed }, 'abandoned uploads removed')
        },
        (error: unknown) =>
          log.warn({ err: error }, 'abandoned uploads could not be removed; next time'),
      ),
    ABANDONED_AFTER_MS,
  )
  return {
    name: 'uploads',
    handlers: createUploadHandlers(uploads, config.uploadMaxBytes),
    start: sweeping.start,
    stop: sweeping.stop,
  }
}

-- A published event is now deleted rather than marked: the outbox holds only what is yet
-- to go out. Marking rewrote each row with its payload and three index entries; deleting
-- writes neither, and the pruning of published rows goes with it. Events already marked
-- published go now, or the relay would publish them all again.
DELETE FROM "outbox" WHERE "published_at" IS NOT NULL;--> statement-breakpoint
DROP INDEX "outbox_unpublished_idx";--> statement-breakpoint
DROP INDEX "outbox_published_at_idx";--> statement-breakpoint
ALTER TABLE "outbox" DROP COLUMN "published_at";

-- A storage quota per account (UPLOAD_QUOTA_BYTES): upload_usage holds what each account's
-- uploads take, pending ones included, and a pending upload's size counts the bytes it has
-- stored so far. Both start from what is stored now. 'deleted' is added, not used here: a
-- new enum value may not be used in the transaction that adds it.
ALTER TYPE "public"."upload_status" ADD VALUE 'deleted';--> statement-breakpoint
CREATE TABLE "upload_usage" (
	"user_id" integer PRIMARY KEY NOT NULL,
	"used_bytes" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "upload_usage_not_negative" CHECK ("upload_usage"."used_bytes" >= 0)
);
--> statement-breakpoint
UPDATE "uploads" SET "size" = (
	SELECT coalesce(sum(octet_length("bytes")), 0) FROM "upload_chunks" WHERE "upload_id" = "uploads"."id"
) WHERE "size" IS NULL;--> statement-breakpoint
ALTER TABLE "uploads" ALTER COLUMN "size" SET DEFAULT 0;--> statement-breakpoint
ALTER TABLE "uploads" ALTER COLUMN "size" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "upload_usage" ADD CONSTRAINT "upload_usage_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
INSERT INTO "upload_usage" ("user_id", "used_bytes")
	SELECT "owner_id", sum("size") FROM "uploads" GROUP BY "owner_id";--> statement-breakpoint
CREATE INDEX "uploads_owner_complete_idx" ON "uploads" USING btree ("owner_id","id") WHERE "uploads"."status" = 'complete';

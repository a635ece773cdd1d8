CREATE TABLE "product_counts" (
	"category" text PRIMARY KEY NOT NULL,
	"live" integer NOT NULL
);

/**
 * Images pasted or dropped into the composer: read into base64 in the page, shown as
 * thumbnails (each removable) until the prompt is sent with them as ACP `image` blocks.
 * The server checks the bytes and the limits; the page only keeps to the four types
 * the server takes, so a PDF or a text file is refused here with a word why.
 */
import type { ImageAttachment } from "./messages";

/** The image types the server accepts (it decides by the bytes; these are what a page names). */
export const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/** A file's bytes as base64 (FileReader's data URL, without its `data:…;base64,` head). */
function readBase64(file: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result ?? "");
      resolve(url.slice(url.indexOf(",") + 1));
    };
    reader.onerror = () => reject(reader.error ?? new Error("the file could not be read"));
    reader.readAsDataURL(file);
  });
}

/** The files a paste or a drop carries (clipboard items of kind `file` count too). */
export function filesOf(data: DataTransfer | null): File[] {
  if (!data) return [];
  const files = [...data.files];
  if (files.length) return files;
  return [...data.items].filter((i) => i.kind === "file").flatMap((i) => i.getAsFile() ?? []);
}

export class Attachments {
  private list: ImageAttachment[] = [];

  constructor(
    private readonly box: HTMLElement,
    /** Said when a file is refused (its type) or cannot be read. */
    private readonly refuse: (text: string) => void,
  ) {}

  get pending(): readonly ImageAttachment[] {
    return this.list;
  }

  /** Take the image files among `files`; say which others were left out. */
  async add(files: readonly File[]): Promise<void> {
    for (const file of files) {
      if (!IMAGE_TYPES.includes(file.type)) {
        this.refuse(`Not attached: ${file.name || "the pasted file"} (${file.type || "unknown type"}) is not a PNG, JPEG, GIF or WebP image.`);
        continue;
      }
      try {
        const data = await readBase64(file);
        this.list.push({ mimeType: file.type, data, ...(file.name ? { name: file.name } : {}) });
      } catch (err) {
        this.refuse(`Not attached: ${file.name || "the pasted image"}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    this.render();
  }

  /** Hand the images over for sending and empty the strip. */
  take(): ImageAttachment[] {
    const taken = this.list;
    this.list = [];
    this.render();
    return taken;
  }

  private render(): void {
    this.box.hidden = this.list.length === 0;
    this.box.replaceChildren(
      ...this.list.map((image, index) => {
        const item = document.createElement("span");
        item.className = "attachment";
        const img = document.createElement("img");
        img.src = `data:${image.mimeType};base64,${image.data}`;
        img.alt = image.name ?? "pasted image";
        img.title = `${image.name ?? "Pasted image"} (sent with the next prompt)`;
        const remove = document.createElement("button");
        remove.className = "remove-attachment";
        remove.textContent = "×";
        remove.title = "Do not send this image";
        remove.setAttribute("aria-label", "Remove this image");
        remove.addEventListener("click", () => {
          this.list.splice(index, 1);
          this.render();
        });
        item.append(img, remove);
        return item;
      }),
    );
  }
}

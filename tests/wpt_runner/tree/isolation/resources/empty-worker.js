// an empty service worker

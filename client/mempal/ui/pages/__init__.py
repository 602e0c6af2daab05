"""The viewer's pages, one module each: ``render(request, ctx, ...)`` returns the page's HTML."""
